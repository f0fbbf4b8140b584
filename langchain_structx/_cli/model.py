"""The chat model that `structx extract --model` names, loaded before any text is read."""

from __future__ import annotations

import argparse
import importlib
import os
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel

from langchain_structx._cli.exits import EXIT_MODEL, CliError

MIN_N_CTX = 512
"""The smallest `--n-ctx` taken. The system prompt and the schema alone take a few
hundred tokens, so a smaller window holds no text; and below about 64 tokens
llama.cpp fails inside (a numpy broadcast error) instead of reporting the window."""

PYTHON_PREFIX = "python:"
"""`--model python:module:attr` names a chat model (or a function returning one)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """What the command line says about the model."""

    name: str
    """`local`, an `init_chat_model` string, or `python:module:attr`."""
    path: str | None = None
    """A GGUF file for the local model."""
    base_url: str | None = None
    """An OpenAI-compatible server's URL, for an `init_chat_model` string."""
    n_ctx: int | None = None
    """The local model's context window; its default when None."""
    threads: int | None = None
    """The local model's CPU threads; every core when None."""

    @property
    def embedded(self) -> bool:
        """Whether this is the embedded model, which runs one text at a time."""
        return self.name == "local"


def load_model(spec: ModelSpec) -> Any:
    """The chat model for `spec`, ready to answer (the local one's weights are loaded).

    Raises:
        CliError: With exit code 3 when the model cannot be loaded.
    """
    try:
        if spec.embedded:
            return _local(spec)
        if spec.name.startswith(PYTHON_PREFIX):
            return _from_python(spec.name.removeprefix(PYTHON_PREFIX))
        from langchain.chat_models import init_chat_model

        return init_chat_model(spec.name, **_connection(spec))
    except CliError:
        raise
    except ImportError as exc:
        hint = " (install langchain-structx[local])" if spec.embedded else ""
        raise CliError(f"cannot load model {spec.name!r}: {exc}{hint}", EXIT_MODEL) from None
    except Exception as exc:  # noqa: BLE001 - credentials, files, providers: all mean "cannot load"
        raise CliError(f"cannot load model {spec.name!r}: {exc}", EXIT_MODEL) from None


def _local(spec: ModelSpec) -> Any:
    from langchain_structx.local import LocalChatModel

    options: dict[str, Any] = {"model_path": spec.path}
    if spec.n_ctx is not None:
        options["n_ctx"] = spec.n_ctx
    if spec.threads is not None:
        options["n_threads"] = spec.threads
    model = LocalChatModel(**options)
    model.load()  # a missing or broken file is reported now, not on the first text
    return model


def _connection(spec: ModelSpec) -> dict[str, Any]:
    if spec.base_url is None:
        return {}
    options: dict[str, Any] = {"base_url": spec.base_url}
    if spec.name.startswith("openai:") and not os.environ.get("OPENAI_API_KEY"):
        options["api_key"] = "unused"  # a self-hosted server usually asks for no key
    return options


def _from_python(target: str) -> BaseChatModel:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise CliError(f"--model python:{target} must read python:module:attr", EXIT_MODEL)
    found = getattr(importlib.import_module(module_name), attr)
    model = found if isinstance(found, BaseChatModel) else found()
    if not isinstance(model, BaseChatModel):
        raise CliError(f"--model python:{target} is not a chat model", EXIT_MODEL)
    return model


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The options that choose and load the model, shared by `extract` and `eval`."""
    add = parser.add_argument
    add(
        "--model",
        default="local",
        help="'local' (the embedded model), an init_chat_model string such as "
        "openai:gpt-4.1-mini, or python:module:attr (default: local)",
    )
    add(
        "--base-url",
        help="the URL of an OpenAI-compatible server for --model openai:NAME (default: "
        "the provider's own)",
    )
    add("--model-path", help="a GGUF file for the local model (default: the embedded weights)")
    add(
        "--n-ctx",
        type=int,
        help=f"the local model's context window, in tokens (default: 4096; at least {MIN_N_CTX}: "
        "the prompt and schema alone take a few hundred)",
    )
    add("--threads", type=int, help="CPU threads for the local model (default: every core)")


def model_spec(args: argparse.Namespace) -> ModelSpec:
    """What the command line's model options say."""
    return ModelSpec(
        name=args.model,
        path=args.model_path,
        base_url=args.base_url,
        n_ctx=args.n_ctx,
        threads=args.threads,
    )


def check_model_args(args: argparse.Namespace) -> None:
    """Refuse model options that contradict each other, before anything is loaded.

    Raises:
        CliError: A usage error.
    """
    if args.n_ctx is not None and args.n_ctx < MIN_N_CTX:
        raise CliError(f"--n-ctx must be >= {MIN_N_CTX}: the prompt and schema alone need more")
    local_only = [o for o in ("model_path", "n_ctx", "threads") if getattr(args, o) is not None]
    if args.model != "local" and local_only:
        flag = "--" + local_only[0].replace("_", "-")
        raise CliError(f"{flag} is for the embedded model; it does nothing with --model")
    if args.model == "local" and args.base_url:
        raise CliError("--base-url needs an init_chat_model --model, such as openai:NAME")
    if args.model is not None and not args.model.strip():
        raise CliError("--model is empty")
