"""The process-wide numerical configuration (models/jaxconfig.py) is in effect."""

import jax.numpy as jnp
from threadpoolctl import threadpool_info

import models.jaxconfig


def test_float64_and_one_blas_thread_by_default() -> None:
    assert jnp.asarray(1.0).dtype == jnp.float64
    blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    assert blas, "no BLAS library found loaded"
    if models.jaxconfig.BLAS_THREADS > 0:
        assert {lib["num_threads"] for lib in blas} == {models.jaxconfig.BLAS_THREADS}
