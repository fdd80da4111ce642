"""(being written for issue 13)"""
