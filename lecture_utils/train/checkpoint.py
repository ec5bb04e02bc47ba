"""Checkpoints (§8.2): every RNG state, atomic writes, safe loading.

``save_checkpoint`` and ``load_checkpoint`` are lesson code from notebook 08 (exported
below); ``read_checkpoint``, the file loader at the edge, turns every kind of bad file
into one clear error, and checks the sha256 that the Trainer stores with its checkpoints
(so bytes flipped inside the tensor data are caught, not loaded).
"""

from __future__ import annotations

import hashlib
import pickle
import random
import warnings
from pathlib import Path

import numpy as np
import torch

from lecture_utils.files import replace_atomically

DIGEST = "sha256"  # the key in a Trainer checkpoint's ``extra`` that holds payload_digest


def payload_digest(model_state: dict, optimizer_state: dict, step: int, rng: dict, settings: dict | None = None) -> str:
    """sha256 over every tensor's bytes and every plain value of a checkpoint's payload: its model,
    optimizer, step and RNG states and the run's ``settings`` (the ``extra`` that --resume relies on:
    config, training settings, resolved warm-up and precision, the data's sha256; without the digest
    itself). ``settings=None`` gives the digest of checkpoints saved before issue 38, which left them out."""
    h = hashlib.sha256()

    def feed(x):
        if isinstance(x, torch.Tensor):
            t = x.detach().cpu().contiguous()
            h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
        elif isinstance(x, dict):
            h.update(b"{")
            for k in sorted(x, key=repr):
                h.update(repr(k).encode())
                feed(x[k])
            h.update(b"}")
        elif isinstance(x, list | tuple):  # a tuple may come back as a list: the same here
            h.update(b"[")
            for v in x:
                feed(v)
            h.update(b"]")
        else:
            h.update(repr(x).encode())

    feed([model_state, optimizer_state, int(step), rng, *([] if settings is None else [settings])])
    return h.hexdigest()


def rng_state(generator: torch.Generator | None = None) -> dict:
    """Every RNG state, in types that ``torch.load(weights_only=True)`` accepts."""
    kind, keys, pos, has_gauss, gauss = np.random.get_state()
    state = {"python": random.getstate(), "numpy": (kind, torch.from_numpy(keys.copy()), pos, has_gauss, gauss),
             "torch": torch.get_rng_state(),
             "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}
    if generator is not None:
        state["generator"] = generator.get_state()
    return state


def set_rng_state(state: dict, generator: torch.Generator | None = None) -> None:
    """Restore what :func:`rng_state` saved (``generator``: the data sampler's, if saved)."""
    random.setstate(state["python"])
    kind, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((kind, keys.numpy(), pos, has_gauss, gauss))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if generator is not None:
        if "generator" not in state:
            raise ValueError("checkpoint holds no data-sampler generator state")
        generator.set_state(state["generator"])


def read_checkpoint(path: str | Path) -> dict:
    """Load a checkpoint's contents safely (``weights_only=True``). Whatever is wrong with the file
    (truncated, bytes flipped, another program's pickle, not a checkpoint at all) is one
    ``ValueError`` naming it and why."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        with warnings.catch_warnings():  # a foreign pickle's protocol warning: the one line below says more
            warnings.simplefilter("ignore")
            payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        if "GLOBAL" in str(err):  # it names a Python object (a function, a class) to rebuild
            raise ValueError(f"refusing to load {path}: it holds arbitrary pickled objects, which "
                             "weights_only loading does not execute") from err
        raise ValueError(f"{path} is not a readable checkpoint (truncated or corrupt)") from err
    except Exception as err:  # a damaged file fails anywhere inside torch.load: KeyError, IndexError, ...
        reason = str(err).strip().splitlines()[0][:200] if str(err).strip() else type(err).__name__
        raise ValueError(f"{path} is not a readable checkpoint (truncated or corrupt): {reason}") from err
    problem = _layout_problem(payload)
    if problem:
        raise ValueError(f"{path} is not a lecture_utils checkpoint ({problem})")
    saved = digest_of(payload)
    if saved is not None:  # the Trainer's checkpoints carry one (lecture_utils/train/trainer.py)
        parts = payload["model"], payload["optimizer"], payload["step"], payload["rng"]
        got = payload_digest(*parts, {k: v for k, v in payload["extra"].items() if k != DIGEST})
        if got != saved and payload_digest(*parts) != saved:  # (the second: a checkpoint saved before issue 38)
            raise ValueError(f"{path} is corrupt: its contents do not match the sha256 saved with them "
                             f"({got[:12]}... vs {str(saved)[:12]}...); resume from an intact copy")
    return payload


def digest_of(payload: dict):
    """The sha256 the Trainer saved in a checkpoint's ``extra`` (None if it has none: notebook 08's)."""
    extra = payload.get("extra")
    return extra.get(DIGEST) if isinstance(extra, dict) else None


def _layout_problem(payload) -> str | None:
    """What keeps ``payload`` from being what save_checkpoint writes, or None."""
    if not isinstance(payload, dict):
        return f"a {type(payload).__name__}, not a dict"
    missing = sorted({"model", "optimizer", "step", "rng"} - set(payload))
    if missing:
        return f"missing {missing}"
    model, optimizer, step, rng = payload["model"], payload["optimizer"], payload["step"], payload["rng"]
    if not (isinstance(model, dict) and all(isinstance(v, torch.Tensor) for v in model.values())):
        return "its model is not a dict of tensors"
    if not (isinstance(optimizer, dict) and isinstance(optimizer.get("state"), dict)
            and isinstance(optimizer.get("param_groups"), list)):
        return "its optimizer has no state and param_groups"
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return f"its step is {step!r}"
    if not (isinstance(rng, dict) and {"python", "numpy", "torch"} <= set(rng)):
        return "its RNG states are incomplete"
    return None


def resume_from(path: Path, model, optimizer, generator, what: str) -> int:
    """The lesson's load_checkpoint, for --resume: a checkpoint that does not fit ``model`` and
    ``optimizer`` (another size, another optimizer, no sampler state) is one ValueError naming the
    file and why. Returns the step."""
    try:
        return load_checkpoint(path, model, optimizer, generator=generator)
    except (ValueError, RuntimeError, KeyError, IndexError, TypeError, AttributeError) as err:
        if isinstance(err, ValueError) and str(path) in str(err):  # read_checkpoint's: it names the file
            raise
        reason = str(err).strip().splitlines()[0][:300] if str(err).strip() else type(err).__name__
        raise ValueError(f"{path} cannot be loaded into this run's {what} and optimizer: {reason}") from None


# >>> lesson code from py_src/08_training_loop.py: edit it there, then `make export`
def save_checkpoint(path, model, optimizer, step: int, *, generator=None, **extra) -> Path:
    """Save model, optimizer, step, every RNG state and ``extra`` (plain data) atomically."""
    path = Path(path)
    payload = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": int(step),
               "rng": rng_state(generator), "extra": extra}
    path.parent.mkdir(parents=True, exist_ok=True)
    # into a temporary file, synced, renamed over `path`, folder synced: never half a checkpoint
    return replace_atomically(path, lambda f: torch.save(payload, f))


def load_checkpoint(path, model, optimizer, *, generator=None) -> int:
    """Restore model, optimizer and every RNG state from ``path``; return the step."""
    payload = read_checkpoint(path)  # torch.load(weights_only=True): tensors and plain data only
    model.load_state_dict(payload["model"])
    optimizer.load_state_dict(payload["optimizer"])
    set_rng_state(payload["rng"], generator)
    return payload["step"]
# <<< lesson code from py_src/08_training_loop.py
