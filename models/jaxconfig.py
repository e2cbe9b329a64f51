"""Enable float64 in JAX before any array is created (every numerical module imports this)."""

import jax

jax.config.update("jax_enable_x64", True)
