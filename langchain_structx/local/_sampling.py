"""Greedy decoding under a grammar that checks one token per step, not the vocabulary.

llama-cpp-python chains the grammar before the greedy pick, so at every step the
grammar is matched against each of the ~150,000 tokens of the vocabulary, which on a
small model costs about as much as the decode step itself. Greedy decoding only
needs the best token the grammar allows: take the best token, ask the grammar about
that one, and only when it is refused apply the grammar to the whole vocabulary (as
llama.cpp's own command-line sampler does). The chosen token is the same either way.
"""

from __future__ import annotations

import ctypes
from typing import Any

from langchain_structx.local._grammar import GrammarError
from langchain_structx.local._weights import LocalModelError

__all__ = ("GreedyGrammarSampler", "install_fast_greedy")


class GreedyGrammarSampler:
    """A stand-in for llama-cpp-python's sampler chain: greedy, under a grammar.

    Args:
        vocab: The model's `llama_vocab` pointer.
        grammar: GBNF text with a `root` rule.
        n_vocab: Number of tokens in the vocabulary.

    Raises:
        GrammarError: llama.cpp cannot parse the grammar.
    """

    def __init__(self, vocab: Any, grammar: str, n_vocab: int) -> None:
        import llama_cpp as _llama_cpp
        import numpy as _np

        llama_cpp: Any = _llama_cpp
        np: Any = _np
        self._llama_cpp = llama_cpp
        self._np = np
        self._grammar = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
        if not self._grammar:
            raise GrammarError("llama.cpp could not parse the generated grammar")
        self._n_vocab = n_vocab
        self._one = (llama_cpp.llama_token_data * 1)()
        self._all = (llama_cpp.llama_token_data * n_vocab)()
        view = np.frombuffer(self._all, dtype=_token_dtype(np))
        view["id"] = np.arange(n_vocab, dtype=np.int32)
        self._view = view

    def __del__(self) -> None:
        grammar = getattr(self, "_grammar", None)
        if grammar:
            self._llama_cpp.llama_sampler_free(grammar)
            self._grammar = None

    def sample(self, ctx: Any, idx: int = -1) -> int:
        """Pick the best token the grammar allows at position `idx` and accept it."""
        pointer = self._llama_cpp.llama_get_logits_ith(ctx.ctx, idx)
        logits = self._np.ctypeslib.as_array(pointer, shape=(self._n_vocab,))
        token = int(logits.argmax())
        if not self._allows(token, float(logits[token])):
            token = self._best_allowed(logits)
        self._llama_cpp.llama_sampler_accept(self._grammar, token)
        return token

    def accept(self, token: int) -> None:
        """Advance the grammar over a token chosen elsewhere."""
        self._llama_cpp.llama_sampler_accept(self._grammar, token)

    def reset(self) -> None:
        """Return the grammar to its start."""
        self._llama_cpp.llama_sampler_reset(self._grammar)

    def _apply(self, data: Any, size: int) -> None:
        array = self._llama_cpp.llama_token_data_array(
            data=data, size=size, selected=-1, sorted=False
        )
        self._llama_cpp.llama_sampler_apply(self._grammar, ctypes.byref(array))

    def _allows(self, token: int, logit: float) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, logit, 0.0
        self._apply(self._one, 1)
        return bool(self._one[0].logit != float("-inf"))

    def _best_allowed(self, logits: Any) -> int:
        self._view["logit"] = logits
        self._apply(self._all, self._n_vocab)
        return int(self._view["logit"].argmax())


def _token_dtype(np: Any) -> Any:
    import llama_cpp

    fields = [("id", np.int32), ("logit", np.float32), ("p", np.float32)]
    dtype = np.dtype(fields, align=True)
    if dtype.itemsize != ctypes.sizeof(llama_cpp.llama_token_data):
        raise LocalModelError("unexpected llama_token_data layout")
    return dtype


_NEUTRAL = {
    "temp": 0.0,
    "repeat_penalty": 1.0,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
    "mirostat_mode": 0,
    "logits_processor": None,
}


def install_fast_greedy(llama: Any) -> None:
    """Make `llama` decode greedy, grammar-constrained requests with `GreedyGrammarSampler`.

    Every other request (sampling at a temperature, penalties, logits processors, no
    grammar) keeps llama-cpp-python's own sampler chain.
    """
    original = llama._init_sampler

    def init_sampler(**kwargs: Any) -> Any:
        grammar = kwargs.get("grammar")
        plain = all(key in kwargs and kwargs[key] == value for key, value in _NEUTRAL.items())
        if grammar is None or not plain:
            return original(**kwargs)
        return GreedyGrammarSampler(llama._model.vocab, grammar._grammar, llama.n_vocab())

    llama._init_sampler = init_sampler
