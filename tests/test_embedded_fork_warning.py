"""``raptorgrid run`` starts its embedded workers after JAX is imported: their start (fork, then
exec at once) must not print JAX's fork warning, which is a false alarm there."""

from __future__ import annotations

import subprocess
import sys
import warnings

import jax.numpy as jnp
from raptorgrid.embedded import FORK_WARNING, exec_after_fork


def _start() -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        subprocess.run([sys.executable, "-c", "pass"], check=True, preexec_fn=lambda: None)
        return [w for w in caught if "os.fork() was called" in str(w.message)]


def test_a_worker_start_prints_no_fork_warning() -> None:
    (jnp.ones(2) + 1).block_until_ready()  # JAX's runtime started: it warns at a fork from now
    assert _start(), "JAX no longer warns at fork: this test no longer tests anything"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with exec_after_fork():
            subprocess.run([sys.executable, "-c", "pass"], check=True, preexec_fn=lambda: None)
    assert not [w for w in caught if "os.fork() was called" in str(w.message)]
    assert FORK_WARNING.startswith("os")
