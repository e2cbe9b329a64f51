"""The executable store: compile once per structure, load everywhere else."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from dae_examples import linear_index1

from models.executables import load_or_compile


def _builder(offset: float):
    """A function whose compiled code is new to every test run (the constant), so JAX's own
    persistent cache cannot hand back an executable from an earlier run."""

    def build():
        def residual_norm(x, z, p):
            return jnp.sum(x**2) + jnp.sum(z**2) * p["k"] + offset

        return residual_norm

    return build


def test_concurrent_first_requests_compile_once_and_the_rest_load(tmp_path, monkeypatch):
    monkeypatch.setenv("RAPTORGRID_JAX_CACHE_DIR", str(tmp_path))
    system = linear_index1()
    args = (jnp.ones(2), jnp.ones(1), {"k": jnp.asarray(0.5)})
    key = ("test", "concurrent", str(tmp_path))
    offset = float(time.time_ns() % 1_000_000)
    _build = _builder(offset)
    results: list[tuple] = []
    barrier = threading.Barrier(3)

    def request() -> None:
        barrier.wait()
        results.append(load_or_compile(system, key, _build, args))

    threads = [threading.Thread(target=request) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    compiled = [r for r in results if r[1] > 0.0]
    loaded = [r for r in results if r[1] == 0.0 and r[2] > 0.0]
    assert len(compiled) == 1 and len(loaded) == 2
    values = {float(r[0](*args)) for r in results}
    assert values == {2.5 + offset}
    # a later request loads too, and a disabled store compiles without writing
    again = load_or_compile(system, key, _build, args)
    assert again[1] == 0.0 and again[2] > 0.0
    monkeypatch.setenv("RAPTORGRID_JAX_CACHE_DIR", "off")
    off = load_or_compile(system, key, _build, args)
    assert off[1] > 0.0 and off[2] == 0.0
    assert np.isclose(float(off[0](*args)), 2.5 + offset)


def test_stored_power_flow_equals_a_fresh_solve(tmp_path, monkeypatch):
    """A network's solved grid comes from the store after the first solve, equal field by field
    (values and Python types) to a fresh import and power flow."""
    import dataclasses

    import pandapower.networks as pn

    from models.cases.pandapower_grid import case9_grid, solved_pandapower_grid

    monkeypatch.setenv("RAPTORGRID_JAX_CACHE_DIR", str(tmp_path))
    first = case9_grid()
    assert list(tmp_path.rglob("*.npz"))  # stored
    stored, fresh = case9_grid(), solved_pandapower_grid(pn.case9(), "case9")
    for field in dataclasses.fields(fresh):
        ours, theirs = getattr(stored, field.name), getattr(fresh, field.name)
        assert type(ours) is type(theirs), field.name
        nan_ok = np.asarray(theirs).dtype.kind in "fc"  # v_set is nan where no bus holds |V|
        assert np.array_equal(np.asarray(ours), np.asarray(theirs), equal_nan=nan_ok), field.name
        first_value = np.asarray(getattr(first, field.name))
        assert np.array_equal(first_value, np.asarray(theirs), equal_nan=nan_ok)


@pytest.mark.services
def test_a_redis_lock_serializes_first_compiles_without_the_file_lock(
    tmp_path, monkeypatch, redis_url
):
    """Workers on several hosts cannot rely on flock: with the Redis compile lock installed
    (as the worker does when its broker is Redis), concurrent first requests still compile
    once, and the file lock is never taken; an unreachable Redis falls back to the file lock."""
    from models import executables
    from workers.jaxsetup import redis_compile_lock

    monkeypatch.setenv("RAPTORGRID_JAX_CACHE_DIR", str(tmp_path))

    def no_file_lock(path):  # noqa: ANN001, ANN202
        raise AssertionError("the file lock was used")

    monkeypatch.setattr(executables, "_file_lock", no_file_lock)
    executables.set_compile_lock(redis_compile_lock(redis_url))
    try:
        system = linear_index1()
        args = (jnp.ones(2), jnp.ones(1), {"k": jnp.asarray(0.5)})
        offset = float(time.time_ns() % 1_000_000) + 0.25
        key = ("test", "redis lock", str(tmp_path))
        results: list[tuple] = []
        barrier = threading.Barrier(3)

        def request() -> None:
            barrier.wait()
            results.append(load_or_compile(system, key, _builder(offset), args))

        threads = [threading.Thread(target=request) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(r[1] > 0.0 for r in results) == [False, False, True]
        assert {float(r[0](*args)) for r in results} == {2.5 + offset}
        # Redis unreachable: the file lock takes over (and is used)
        monkeypatch.undo()
        monkeypatch.setenv("RAPTORGRID_JAX_CACHE_DIR", str(tmp_path))
        executables.set_compile_lock(redis_compile_lock("redis://127.0.0.1:1/0"))
        fallback = load_or_compile(
            system, ("test", "fallback", str(tmp_path)), _builder(offset), args
        )
        assert fallback[1] > 0.0 and list(tmp_path.rglob("*.lock"))
    finally:
        executables.set_compile_lock(None)


def _unique_linear_index1():
    """``linear_index1`` with a constant new to every test run in its equations (so JAX's own
    persistent cache cannot hand back its programs) and x2 declared a controller state."""
    import dataclasses

    base = linear_index1()
    offset = 1e-9 * (time.time_ns() % 1_000_000 + 1)

    def f(x, z, p):
        return base.f(x, z, p) * (1.0 + offset)

    return dataclasses.replace(base, f=f, controller_states=("x2",))


def test_diffrax_trapezoid_and_ida_programs_are_loaded_by_another_process(tmp_path, monkeypatch):
    """Diffrax's segment solves, the trapezoid's steps (dense and sparse) and IDA's kernels go
    through the store like RAPTOR's attempt: a second process (a fresh system object of the same
    structure stands for one) loads them instead of tracing and compiling them again, and
    integrates identically.
    Diffrax's programs can be stored only without Equinox's host callbacks
    (``EQX_ON_ERROR=nan``, ``models.jaxconfig``)."""
    import dataclasses

    from models.scenarios import make_scenario
    from solvers.api import solve
    from solvers.catalogue import DiffraxOptions
    from solvers.diffrax_methods import _Key, compiled_segment_solver
    from solvers.trapezoid_kernel import compiled_controller_step, compiled_step

    monkeypatch.setenv("RAPTORGRID_JAX_CACHE_DIR", str(tmp_path))
    first = _unique_linear_index1()
    scenario = make_scenario(first, None, t_end=0.2, n_eval=11)
    methods = {"kvaerno5": {"rtol": 1e-6}, "trapezoid": {"dt": 1e-3}}
    methods["trapezoid-delayed"] = {"dt": 1e-3}
    methods["trapezoid-sparse"] = {"dt": 1e-3, "linear_solver": "sparse"}
    methods["ida"] = {"rtol": 1e-6}

    def method(name: str) -> str:
        return name.removesuffix("-sparse")

    ran = {m: solve(first, scenario, method(m), **opts) for m, opts in methods.items()}
    assert all(r.succeeded for r in ran.values()), {m: r.message for m, r in ran.items()}
    assert all(r.stats.load_seconds == 0.0 for r in ran.values())

    second = dataclasses.replace(first)  # same equations, nothing of it cached in memory
    key = _Key("kvaerno5", 16, DiffraxOptions().max_steps, False)  # what ``solve`` compiled
    for get in (
        lambda s: compiled_segment_solver(s, key),
        compiled_step,
        lambda s: compiled_controller_step(s, np.array([1])),
    ):
        _, compile_s, load_s = get(second)
        assert compile_s == 0.0 and load_s > 0.0
    for name, options in methods.items():
        again = solve(dataclasses.replace(first), scenario, method(name), **options)
        assert again.stats.load_seconds > 0.0, name
        np.testing.assert_array_equal(again.x_eval, ran[name].x_eval)


_OTHER_PROCESS = """
import sys

import jax
import jax.numpy as jnp
from dae_examples import linear_index1

from models import executables

xla, offset, key, change = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
jax.config.update("jax_compilation_cache_dir", xla)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
if change == "edited sources":
    executables.source_fingerprint = lambda: "sources after an edit"
else:  # an XLA without the store's compile option
    executables._entry_options = lambda tag: {"xla_no_such_option": 1}


def build():
    return lambda x, z, p: jnp.sum(x**2) + jnp.sum(z**2) * p["k"] + offset


args = (jnp.ones(2), jnp.ones(1), {"k": jnp.asarray(0.5)})
executable, compile_s, load_s = executables.load_or_compile(
    linear_index1(), ("test", key), build, args
)
print(compile_s > 0.0, float(executable(*args)))
"""


def _in_another_process(offset: float, key: str, change: str, store: Path) -> list[str]:
    """What ``_OTHER_PROCESS`` prints: it compiles (or loads) ``_builder(offset)``'s program
    under ``("test", key)`` with this process's JAX cache and ``store`` as its store, after
    ``change`` ("edited sources", or anything else for an XLA without the store's option)."""
    import os
    import subprocess
    import sys

    import jax

    path = os.pathsep.join(filter(None, [str(Path(__file__).parent), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _OTHER_PROCESS, jax.config.jax_compilation_cache_dir,
         repr(offset), key, change],
        capture_output=True, text=True, timeout=240, cwd=Path(__file__).parents[1],
        env={**os.environ, "PYTHONPATH": path, "RAPTORGRID_JAX_CACHE_DIR": str(store)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_the_store_refills_after_an_edit_of_the_sources(tmp_path, monkeypatch):
    """An edit of ``models``/``solvers`` changes every store key but not the programs it left
    alone, which JAX's persistent cache (keyed on the program) still holds. The first process
    under the new sources must compile such a program for real and store it, so that later
    processes load it instead of tracing and lowering it (a copy handed back by JAX's cache
    cannot be stored). Another process stands for the edited sources."""
    from models import executables

    monkeypatch.setenv("RAPTORGRID_JAX_CACHE_DIR", str(tmp_path))
    args = (jnp.ones(2), jnp.ones(1), {"k": jnp.asarray(0.5)})
    offset = float(time.time_ns() % 1_000_000) + 0.75
    key = ("test", "edited sources")
    first = load_or_compile(linear_index1(), key, _builder(offset), args)
    assert first[1] > 0.0 and len(list(tmp_path.rglob("*.pkl"))) == 1

    printed = _in_another_process(offset, key[1], "edited sources", tmp_path)
    assert printed == ["True", repr(2.5 + offset)]
    assert len(list(tmp_path.rglob("*.pkl"))) == 2  # stored under the edited sources' key

    monkeypatch.setattr(executables, "source_fingerprint", lambda: "sources after an edit")
    later = load_or_compile(linear_index1(), key, _builder(offset), args)
    assert later[1] == 0.0 and later[2] > 0.0
    assert float(later[0](*args)) == 2.5 + offset


def test_an_xla_without_the_entry_option_still_compiles(tmp_path, monkeypatch):
    """The store's per-entry compile option is a debug option of XLA's; where an XLA does not
    know it, the program compiles without it (and is stored) instead of every compile failing;
    and a program JAX's cache then hands back is not stored (another process, with the same
    JAX cache, stands for it: such a copy loses its kernels when serialized)."""
    from models import executables

    monkeypatch.setenv("RAPTORGRID_JAX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(executables, "_entry_options", lambda tag: {"xla_no_such_option": 1})
    args = (jnp.ones(2), jnp.ones(1), {"k": jnp.asarray(0.5)})
    offset = float(time.time_ns() % 1_000_000) + 0.125
    key = ("test", "no option")
    executable, compile_s, _ = load_or_compile(linear_index1(), key, _builder(offset), args)
    assert compile_s > 0.0 and float(executable(*args)) == 2.5 + offset
    assert len(list(tmp_path.rglob("*.pkl"))) == 1

    other = tmp_path / "other process"
    printed = _in_another_process(offset, key[1], "no option", other)
    assert printed == ["True", repr(2.5 + offset)]
    assert not list(other.rglob("*.pkl"))  # JAX's cache served it: not stored
