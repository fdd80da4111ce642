"""Shortened binary BCH codes for SPEX query delays: construction, encoding, hard and soft decoding.

Written from textbook definitions:

* S. Lin and D. J. Costello, *Error Control Coding* (2nd ed., 2004): finite fields GF(2^m)
  (ch. 2, primitive polynomials of Table 2.7), binary primitive BCH codes (ch. 6: generator
  polynomial as the lcm of minimal polynomials of ``alpha^1 .. alpha^{2t}``, syndromes,
  Berlekamp-Massey, Chien search), shortened cyclic codes (sec. 5.10).
* J. L. Massey, "Shift-register synthesis and BCH decoding", IEEE Trans. IT-15 (1969).
* D. Chase, "A class of algorithms for decoding block codes with channel measurement
  information", IEEE Trans. IT-18 (1972): Chase-II soft decoding.
* SPEX: Kang et al., "SPEX: Scaling Feature Interaction Explanations for LLMs", ICML 2025,
  arXiv:2502.13870 (how the code becomes the "delays" of the query design).

Layout conventions
------------------
A code is built for ``n`` message bits (= number of players) and correction capability ``t``.
Let ``p = n_parity = deg g``. A codeword is a ``(length,) = (n + p,)`` bit array laid out as
``[message bits (n), parity bits (p)]``. In polynomial form (cyclic code of length
``N = 2^m - 1``) array position ``j < n`` is the coefficient of ``x^(p + j)`` and array position
``n + r`` is the coefficient of ``x^r``; systematic encoding is
``c(x) = x^p m(x) + (x^p m(x) mod g(x))`` with ``m(x) = sum_i m_i x^i``. The unused top
``N - p - n`` message coefficients are fixed to zero (shortening).

So ``generator_matrix() = [I_n | P]`` and ``parity_check_matrix() = [P^T | I_p]`` where
``P[i, r]`` is the coefficient of ``x^r`` in ``x^(p+i) mod g(x)``.

Soft values: a reliability ``r > 0`` means bit 0, ``r < 0`` means bit 1, ``|r|`` is the confidence
(as for an LLR ``log P(0)/P(1)``, or for SPEX's ratio ``U_r / U_0 = (-1)^{<d_r, k>}``).

SPEX use (reference sheet sec. 1.2/1.3)
---------------------------------------
:func:`delay_matrix` returns ``D`` of shape ``(p + 1, n)``: row 0 is zero and row ``r >= 1`` is
``P[:, r-1]``, so ``<d_r, k> mod 2`` is parity bit ``r-1`` of the codeword of message ``k``.
From the ``p`` observed (possibly wrong) parity signs of a singleton bin,
:meth:`BCHCode.decode_delays` / :meth:`BCHCode.decode_delays_soft` decode the received word
``[0 ... 0, observed parity]``: its difference with the codeword ``[k, P^T k]`` has the ones of
``k`` in the message part plus the parity errors, so ``k`` is recovered whenever
``|k| + #parity errors <= t`` (low-degree assumption of SPEX).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

__all__ = [
    "PRIMITIVE_POLYNOMIALS",
    "GF2m",
    "BCHCode",
    "delay_matrix",
]

#: Primitive polynomials over GF(2) for m = 2..16 (Lin & Costello, Table 2.7), as integers whose
#: bit i is the coefficient of x^i:
#:
#: ====  ==================================
#:  m    polynomial
#: ====  ==================================
#:  2    x^2 + x + 1
#:  3    x^3 + x + 1
#:  4    x^4 + x + 1
#:  5    x^5 + x^2 + 1
#:  6    x^6 + x + 1
#:  7    x^7 + x^3 + 1
#:  8    x^8 + x^4 + x^3 + x^2 + 1
#:  9    x^9 + x^4 + 1
#:  10   x^10 + x^3 + 1
#:  11   x^11 + x^2 + 1
#:  12   x^12 + x^6 + x^4 + x + 1
#:  13   x^13 + x^4 + x^3 + x + 1
#:  14   x^14 + x^10 + x^6 + x + 1
#:  15   x^15 + x + 1
#:  16   x^16 + x^12 + x^3 + x + 1
#: ====  ==================================
PRIMITIVE_POLYNOMIALS = {
    2: 0b111,
    3: 0b1011,
    4: 0x13,
    5: 0x25,
    6: 0x43,
    7: 0x89,
    8: 0x11D,
    9: 0x211,
    10: 0x409,
    11: 0x805,
    12: 0x1053,
    13: 0x201B,
    14: 0x4443,
    15: 0x8003,
    16: 0x1100B,
}


class GF2m:
    """The finite field GF(2^m), elements as integers ``0 .. 2^m - 1`` (polynomial basis).

    ``alpha`` (the integer 2, i.e. the polynomial ``x``) is a root of the primitive polynomial
    ``PRIMITIVE_POLYNOMIALS[m]``. ``exp[i] = alpha^i`` (stored for ``i = 0 .. 2(2^m-1)-1`` so
    that sums of two logs need no reduction) and ``log[a]`` for ``a != 0`` (``log[0] = -1``).
    Addition is XOR; :meth:`multiply`, :meth:`inverse`, :meth:`power` act elementwise on numpy
    integer arrays (with broadcasting).
    """

    def __init__(self, m: int):
        if m not in PRIMITIVE_POLYNOMIALS:
            raise ValueError(f"m must be in 2..16, got {m}")
        self.m = int(m)
        self.order = (1 << self.m) - 1  # multiplicative group order N
        self.poly = PRIMITIVE_POLYNOMIALS[self.m]
        n = self.order
        exp = np.zeros(2 * n, dtype=np.int64)
        log = np.full(n + 1, -1, dtype=np.int64)
        a = 1
        for i in range(n):
            exp[i] = a
            if log[a] != -1:  # alpha^i repeats before i = N: polynomial not primitive
                raise ValueError(f"polynomial {self.poly:#x} is not primitive for m={m}")
            log[a] = i
            a <<= 1
            if a >> self.m:
                a ^= self.poly
        if a != 1:
            raise ValueError(f"polynomial {self.poly:#x} is not primitive for m={m}")
        exp[n:] = exp[:n]
        self.exp = exp
        self.log = log

    def __repr__(self) -> str:
        return f"GF2m(m={self.m}, poly={self.poly:#x})"

    def multiply(self, a, b):
        """Elementwise product of field elements ``a * b`` (broadcasting)."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        out = self.exp[self.log[a] + self.log[b]]
        return np.where((a == 0) | (b == 0), 0, out)

    def inverse(self, a):
        """Elementwise inverse; raises ZeroDivisionError if any element is 0."""
        a = np.asarray(a, dtype=np.int64)
        if np.any(a == 0):
            raise ZeroDivisionError("0 has no inverse in GF(2^m)")
        return self.exp[(self.order - self.log[a]) % self.order]

    def power(self, a, k):
        """Elementwise ``a ** k`` for integer ``k`` (negative only for nonzero ``a``; 0**0 = 1)."""
        a = np.asarray(a, dtype=np.int64)
        k = np.asarray(k, dtype=np.int64)
        if np.any((a == 0) & (k < 0)):
            raise ZeroDivisionError("0 has no inverse in GF(2^m)")
        out = self.exp[(self.log[a] * k) % self.order]
        return np.where(a == 0, np.where(k == 0, 1, 0), out)

    def alpha_power(self, k):
        """``alpha ** k`` for integer (array) ``k``, any sign."""
        return self.exp[np.mod(np.asarray(k, dtype=np.int64), self.order)]

    # ---- helpers used by BCHCode ------------------------------------------------------------
    def cyclotomic_coset(self, j: int) -> list[int]:
        """The 2-cyclotomic coset ``{j 2^k mod N}`` of ``j`` (sorted)."""
        n = self.order
        coset, c = [], j % n
        while c not in coset:
            coset.append(c)
            c = (2 * c) % n
        return sorted(coset)

    def minimal_polynomial(self, j: int) -> np.ndarray:
        """Minimal polynomial of ``alpha^j`` over GF(2): ``prod_{c in coset(j)} (x + alpha^c)``.

        Returned as a 0/1 array of coefficients, lowest degree first.
        """
        poly = np.array([1], dtype=np.int64)  # coefficients in GF(2^m), lowest first
        for c in self.cyclotomic_coset(j):
            root = int(self.exp[c])
            new = np.zeros(len(poly) + 1, dtype=np.int64)
            new[1:] ^= poly  # x * poly
            new[:-1] ^= self.multiply(poly, root)  # root * poly
            poly = new
        if np.any(poly > 1):  # pragma: no cover - mathematically impossible
            raise ArithmeticError("minimal polynomial has coefficients outside GF(2)")
        return poly


@lru_cache(maxsize=None)
def _field(m: int) -> GF2m:
    return GF2m(m)


def _gf2_polymul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.convolve(a, b) % 2


class BCHCode:
    """Shortened narrow-sense primitive binary BCH code: ``n`` message bits, designed distance 2t+1.

    Construction (Lin & Costello ch. 6): choose the smallest ``m`` (2..16) such that
    ``2t < N = 2^m - 1`` and the primitive code of length ``N`` with generator
    ``g(x) = lcm(minimal polynomials of alpha^1 .. alpha^{2t})`` has dimension
    ``N - deg g >= n``; then shorten it to ``n`` message bits. The minimum distance is at least
    ``2t + 1`` (BCH bound), so up to ``t`` bit errors are corrected.

    Attributes: ``n``, ``t``, ``m``, ``N`` (mother code length), ``k_code`` (mother code
    dimension), ``n_parity`` (``deg g``), ``length`` (``n + n_parity``), ``generator_poly``
    (0/1 array, lowest degree first), ``field`` (:class:`GF2m`). See the module docstring for
    the codeword layout ``[message, parity]``.
    """

    def __init__(self, n: int, t: int):
        if int(n) != n or n < 1:
            raise ValueError(f"n (message bits) must be a positive integer, got {n}")
        if int(t) != t or t < 1:
            raise ValueError(f"t (correctable errors) must be a positive integer, got {t}")
        self.n, self.t = int(n), int(t)
        for m in range(2, 17):
            N = (1 << m) - 1
            if 2 * self.t >= N:
                continue
            field = _field(m)
            # lcm of minimal polynomials = product over distinct cyclotomic cosets.
            g = np.array([1], dtype=np.int64)
            seen = set()
            for j in range(1, 2 * self.t + 1):
                rep = field.cyclotomic_coset(j)[0]
                if rep in seen:
                    continue
                seen.add(rep)
                g = _gf2_polymul(g, field.minimal_polynomial(j))
            if N - (len(g) - 1) >= self.n:
                break
        else:
            raise ValueError(
                f"cannot build a binary BCH code with n={self.n} message bits and t={self.t} "
                "for m <= 16 (field table limit)"
            )
        self.m, self.N, self.field = m, N, field
        self.generator_poly = g.astype(np.uint8)
        self.n_parity = len(g) - 1
        self.k_code = N - self.n_parity
        self.length = self.n + self.n_parity
        p = self.n_parity
        # P[i, r] = coefficient of x^r in x^(p+i) mod g(x).
        P = np.zeros((self.n, p), dtype=np.uint8)
        rem = g[:p].astype(np.uint8).copy()  # x^p mod g = g - x^p (char. 2)
        for i in range(self.n):
            P[i] = rem
            top = rem[p - 1] if p > 0 else 0
            rem = np.concatenate(([0], rem[:-1])).astype(np.uint8)
            if top:
                rem ^= g[:p].astype(np.uint8)
        self._P = P
        # Exponent of x at each array position: message j -> p + j, parity r -> r.
        self.exponents = np.concatenate([p + np.arange(self.n), np.arange(p)]).astype(np.int64)
        # Syndrome matrix: bit b of alpha^(j * e) for j = 1..2t, e = exponent of each position.
        js = np.arange(1, 2 * self.t + 1)
        vals = field.alpha_power(js[None, :] * self.exponents[:, None])  # (length, 2t)
        bits = (vals[:, :, None] >> np.arange(m)) & 1  # (length, 2t, m)
        # float64 so that the product uses BLAS; sums of at most `length` ones are exact.
        self._syn_matrix = bits.reshape(self.length, 2 * self.t * m).astype(np.float64)
        self._bit_weights = (1 << np.arange(m)).astype(np.int64)
        # Chien search: logs of alpha^{-i e}, i = 0..t, for every position (t+1, length), and an
        # exp table padded with zeros so that a sentinel log 2N for the element 0 maps to 0.
        self._chien_log = np.mod(-np.outer(np.arange(self.t + 1), self.exponents), N)
        self._exp0 = np.concatenate([field.exp, np.zeros(2 * N, dtype=np.int64)])

    def __repr__(self) -> str:
        return (
            f"BCHCode(n={self.n}, t={self.t}; m={self.m}, mother=({self.N},{self.k_code}), "
            f"n_parity={self.n_parity}, length={self.length})"
        )

    # ---- matrices ----------------------------------------------------------------------------
    @property
    def parity_part(self) -> np.ndarray:
        """``P`` of shape ``(n, n_parity)``: parity bits of the codeword of each unit message."""
        return self._P.copy()

    def generator_matrix(self) -> np.ndarray:
        """Systematic generator ``G = [I_n | P]`` of shape ``(n, length)`` (uint8)."""
        return np.concatenate([np.eye(self.n, dtype=np.uint8), self._P], axis=1)

    def parity_check_matrix(self) -> np.ndarray:
        """Parity-check ``H = [P^T | I_p]`` of shape ``(n_parity, length)``; ``H c^T = 0`` mod 2."""
        return np.concatenate([self._P.T, np.eye(self.n_parity, dtype=np.uint8)], axis=1)

    def delay_matrix(self) -> np.ndarray:
        """SPEX delay matrix ``D`` of shape ``(n_parity + 1, n)``: a zero row, then ``P^T``.

        ``(D k) mod 2`` is ``[0, parity bits of the codeword of message k]`` (reference sheet
        sec. 1.2, "joint-coded" delays).
        """
        return np.concatenate([np.zeros((1, self.n), dtype=np.uint8), self._P.T], axis=0)

    # ---- encoding ----------------------------------------------------------------------------
    def encode(self, messages) -> np.ndarray:
        """Encode ``(q, n)`` (or ``(n,)``) message bits into ``(q, length)`` codewords (uint8)."""
        msg = self._as_bits(messages, self.n, "messages")
        single = msg.ndim == 1
        msg2 = np.atleast_2d(msg)
        # float64 product (BLAS); sums of at most n ones are exact.
        parity = (msg2.astype(np.float64) @ self._P.astype(np.float64)).astype(np.int64) % 2
        out = np.concatenate([msg2, parity.astype(np.uint8)], axis=1)
        return out[0] if single else out

    # ---- decoding ----------------------------------------------------------------------------
    def syndromes(self, received) -> np.ndarray:
        """Syndromes ``S_j = r(alpha^j)``, ``j = 1..2t``, as field integers of shape ``(q, 2t)``."""
        r = np.atleast_2d(self._as_bits(received, self.length, "received")).astype(np.float64)
        bits = (r @ self._syn_matrix).astype(np.int64) % 2  # (q, 2t*m)
        return bits.reshape(len(r), 2 * self.t, self.m) @ self._bit_weights

    def _berlekamp_massey(self, S: np.ndarray):
        """Vectorised Berlekamp-Massey (Massey 1969) over rows of ``S`` (q, 2t).

        Returns the error-locator coefficients ``Lambda`` (q, 2t+1), lowest first, and the
        register lengths ``L`` (q,).
        """
        f = self.field
        q, two_t = S.shape
        width = two_t + 1
        C = np.zeros((q, width), dtype=np.int64)
        C[:, 0] = 1
        B = C.copy()
        L = np.zeros(q, dtype=np.int64)
        shift = np.ones(q, dtype=np.int64)
        b = np.ones(q, dtype=np.int64)
        idx = np.arange(width)
        for k in range(two_t):
            # discrepancy d = S_k + sum_{i=1..k} C_i S_{k-i}  (S indexed from 0 = S_1)
            d = S[:, k].copy()
            if k > 0:
                prods = f.multiply(C[:, 1 : k + 1], S[:, k - 1 :: -1][:, :k])
                d ^= np.bitwise_xor.reduce(prods, axis=1)
            nz = d != 0
            coef = np.zeros(q, dtype=np.int64)
            if np.any(nz):
                coef[nz] = f.multiply(d[nz], f.inverse(b[nz]))
            src = idx[None, :] - shift[:, None]
            valid = src >= 0
            shifted = np.where(valid, np.take_along_axis(B, np.clip(src, 0, None), axis=1), 0)
            newC = C ^ f.multiply(coef[:, None], shifted)
            grow = nz & (2 * L <= k)
            B = np.where(grow[:, None], C, B)
            L = np.where(grow, k + 1 - L, L)
            b = np.where(grow, d, b)
            shift = np.where(grow, 1, shift + 1)
            C = np.where(nz[:, None], newC, C)
        return C, L

    #: Upper bound on the elements of one Chien-search block (rows * (t+1) * length).
    _BLOCK_ELEMENTS = 1 << 22

    def _decode_words(self, r: np.ndarray):
        """Hard-decode rows of ``r`` (q, length) -> (corrected codewords, ok), in row blocks."""
        q = len(r)
        rows = max(1, self._BLOCK_ELEMENTS // ((self.t + 1) * self.length))
        if q <= rows:
            return self._decode_block(r)
        parts = [self._decode_block(r[i : i + rows]) for i in range(0, q, rows)]
        return (
            np.concatenate([p[0] for p in parts], axis=0),
            np.concatenate([p[1] for p in parts], axis=0),
        )

    def _decode_block(self, r: np.ndarray):
        f = self.field
        S = self.syndromes(r)
        lam, L = self._berlekamp_massey(S)
        lam = lam[:, : self.t + 1]
        # Chien search over the shortened positions only: the position with exponent e is in
        # error iff Lambda(alpha^{-e}) = 0.
        loglam = np.where(lam == 0, 2 * self.N, f.log[lam])
        terms = self._exp0[loglam[:, :, None] + self._chien_log[None, :, :]]  # (q, t+1, length)
        roots = np.bitwise_xor.reduce(terms, axis=1) == 0
        n_roots = roots.sum(axis=1)
        # Failure: more than t errors, or a locator whose roots are not all distinct valid
        # positions (some lie in the shortened-away part or outside GF(2^m)*).
        ok = (L <= self.t) & (n_roots == L)
        corrected = np.where(ok[:, None], r ^ roots.astype(np.uint8), r).astype(np.uint8)
        return corrected, ok

    def decode_hard(self, received):
        """Hard-decision decoding of ``(q, length)`` bits (or one ``(length,)`` word).

        Syndromes in GF(2^m), Berlekamp-Massey error locator, Chien search restricted to the
        ``length`` positions of the shortened code, bit flips. Returns ``(messages, ok)``:
        ``messages`` (q, n) uint8 (the uncorrected message bits where ``ok`` is False) and
        ``ok`` (q,) bool, False when the locator has degree > t or its number of roots among
        the valid positions differs from its degree (a detected uncorrectable pattern).

        Vectorised over ``q`` (processed in blocks of about 4M Chien-search terms): time
        O(q * t * length) for the Chien search, O(q * length * t * m) for the syndromes (one
        integer matrix product) and O(q * t^2) for Berlekamp-Massey.
        """
        r = self._as_bits(received, self.length, "received")
        single = r.ndim == 1
        corrected, ok = self._decode_words(np.atleast_2d(r))
        msgs = corrected[:, : self.n]
        return (msgs[0], bool(ok[0])) if single else (msgs, ok)

    def _chase(self, rel: np.ndarray, n_flip: int, flip_positions: np.ndarray):
        """Chase-II over rows of ``rel`` (q, length), in row blocks; returns (messages, ok)."""
        n_flip = min(int(n_flip), len(flip_positions))
        rows = max(1, self._BLOCK_ELEMENTS // ((1 << n_flip) * self.length))
        parts = [
            self._chase_block(rel[i : i + rows], n_flip, flip_positions)
            for i in range(0, max(len(rel), 1), rows)
        ]
        return (
            np.concatenate([p[0] for p in parts], axis=0),
            np.concatenate([p[1] for p in parts], axis=0),
        )

    def _chase_block(self, rel: np.ndarray, n_flip: int, flip_positions: np.ndarray):
        q = rel.shape[0]
        hard = (rel < 0).astype(np.uint8)
        conf = np.abs(rel)
        if n_flip > 0:
            order = np.argsort(conf[:, flip_positions], axis=1, kind="stable")[:, :n_flip]
            weak = flip_positions[order]  # (q, n_flip) least reliable positions
        else:
            weak = np.zeros((q, 0), dtype=np.int64)
        patterns = np.array(list(itertools.product((0, 1), repeat=n_flip)), dtype=np.uint8)
        n_pat = len(patterns)  # 2^n_flip, first one is all-zero (plain hard decision)
        tests = np.repeat(hard[:, None, :], n_pat, axis=1)  # (q, n_pat, length)
        if n_flip > 0:
            rows = np.arange(q)[:, None, None]
            pats = np.arange(n_pat)[None, :, None]
            tests[rows, pats, weak[:, None, :]] ^= patterns[None, :, :]
        cw, ok = self._decode_words(tests.reshape(q * n_pat, self.length))
        cw = cw.reshape(q, n_pat, self.length)
        ok = ok.reshape(q, n_pat)
        metric = ((cw != hard[:, None, :]) * conf[:, None, :]).sum(axis=2)
        metric = np.where(ok, metric, np.inf)
        best = np.argmin(metric, axis=1)
        any_ok = ok.any(axis=1)
        chosen = cw[np.arange(q), best]
        chosen = np.where(any_ok[:, None], chosen, hard)
        return chosen[:, : self.n], any_ok

    def decode_soft(self, reliabilities, n_flip: int | None = None):
        """Chase-II soft decoding (Chase 1972) of ``(q, length)`` reliabilities.

        Hard decisions: ``r > 0`` -> bit 0, ``r < 0`` -> bit 1 (``r == 0`` -> 0), confidence
        ``|r|``. All ``2^n_flip`` flip patterns of the ``n_flip`` (default ``t``) least reliable
        positions are hard-decoded; among the successful candidates the codeword minimising
        ``sum |r_i|`` over positions disagreeing with the hard decision wins (equivalently the
        maximum correlation with ``r``). Returns ``(messages (q, n) uint8, ok (q,) bool)``;
        ``ok`` is False when no test pattern decoded (messages are then the hard decisions).
        Cost: ``2^n_flip`` hard decodings per word, vectorised.
        """
        rel = np.asarray(reliabilities, dtype=float)
        single = rel.ndim == 1
        rel = np.atleast_2d(rel)
        if rel.ndim != 2 or rel.shape[1] != self.length:
            raise ValueError(f"reliabilities must have shape (q, {self.length}), got {rel.shape}")
        n_flip = self.t if n_flip is None else n_flip
        if n_flip < 0:
            raise ValueError("n_flip must be >= 0")
        msgs, ok = self._chase(rel, n_flip, np.arange(self.length))
        return (msgs[0], bool(ok[0])) if single else (msgs, ok)

    # ---- SPEX helpers ------------------------------------------------------------------------
    def decode_delays(self, parity_bits):
        """Recover ``k`` from ``p`` observed delay bits ``<d_r, k>`` (r = 1..p), hard decisions.

        Decodes the word ``[0 ... 0, parity_bits]``; succeeds (and returns ``k``) whenever
        ``|k|`` plus the number of wrong parity bits is at most ``t``. Input ``(q, n_parity)`` or
        ``(n_parity,)``; returns ``(k (q, n) uint8, ok (q,) bool)``.
        """
        y = self._as_bits(parity_bits, self.n_parity, "parity_bits")
        single = y.ndim == 1
        y = np.atleast_2d(y)
        r = np.concatenate([np.zeros((len(y), self.n), dtype=np.uint8), y], axis=1)
        msgs, ok = self.decode_hard(r)
        return (msgs[0], bool(ok[0])) if single else (msgs, ok)

    def decode_delays_soft(
        self, parity_reliabilities, n_flip: int | None = None, message_prior: float = 0.0
    ):
        """Chase-II version of :meth:`decode_delays` from ``p`` soft parity values.

        ``parity_reliabilities`` (q, n_parity): e.g. SPEX's ``Re(U_r / U_0)``, positive for
        parity bit 0. The message part is the hard word 0 with confidence ``message_prior``
        (default 0: it carries no observation; a positive value adds ``message_prior * |k|`` to
        the Chase metric, a low-degree prior that breaks ties towards small ``|k|``). Only
        parity positions are flipped (the ``n_flip``, default ``t``, least reliable ones).
        Returns ``(k (q, n) uint8, ok (q,) bool)``.
        """
        rel = np.asarray(parity_reliabilities, dtype=float)
        single = rel.ndim == 1
        rel = np.atleast_2d(rel)
        if rel.ndim != 2 or rel.shape[1] != self.n_parity:
            raise ValueError(
                f"parity_reliabilities must have shape (q, {self.n_parity}), got {rel.shape}"
            )
        n_flip = self.t if n_flip is None else n_flip
        if n_flip < 0:
            raise ValueError("n_flip must be >= 0")
        if message_prior < 0:
            raise ValueError("message_prior must be >= 0")
        full = np.concatenate([np.full((len(rel), self.n), float(message_prior)), rel], axis=1)
        msgs, ok = self._chase(full, n_flip, self.n + np.arange(self.n_parity))
        return (msgs[0], bool(ok[0])) if single else (msgs, ok)

    # ---- validation ----------------------------------------------------------------------------
    @staticmethod
    def _as_bits(x, width: int, name: str) -> np.ndarray:
        a = np.asarray(x)
        if a.ndim not in (1, 2) or a.shape[-1] != width:
            raise ValueError(f"{name} must have shape (q, {width}) or ({width},), got {a.shape}")
        if a.size and not np.all((a == 0) | (a == 1)):
            raise ValueError(f"{name} must contain only 0/1 bits")
        return a.astype(np.uint8)


def delay_matrix(n: int, t: int) -> np.ndarray:
    """SPEX delay matrix for ``n`` players and correction capability ``t``: shape ``(p + 1, n)``.

    Row 0 is all-zero (the undelayed query); row ``r`` (1..p) has bit ``i`` equal to parity bit
    ``r-1`` of the systematic codeword of the unit message ``e_i`` of ``BCHCode(n, t)``. Query
    masks are ``(M_c l + d_r) mod 2`` (reference sheet sec. 1.2). Decode with
    ``BCHCode(n, t).decode_delays`` / ``decode_delays_soft``.
    """
    return BCHCode(n, t).delay_matrix()
