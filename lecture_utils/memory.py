"""Memory accounting: bytes per tensor, per dtype, per parameter, per GPU.

memory = numel x bytes per element, and a training run pays several bytes per
parameter (weights, gradients, optimizer state) before a single activation.

One name to import from; each topic has its own module:
``dtypes`` (the dtype table, ``dtype_info``), ``sizes`` (``tensor_bytes``,
``format_bytes``), ``recipes`` (bytes per parameter, what fits a GPU) and
``training_memory`` (a model's training memory, predicted and measured).
"""

from lecture_utils.dtypes import DTYPES, DtypeInfo, as_dtype, dtype_info, dtype_name
from lecture_utils.recipes import (
    RECIPES,
    bytes_per_param,
    max_params_that_fit,
    param_breakdown,
    recipe_name,
    training_state_table,
)
from lecture_utils.sizes import format_bytes, tensor_bytes
from lecture_utils.training_memory import (
    OPTIMIZER_STATE_COPIES,
    TrainingMemory,
    measure_training_memory,
    mlp_activation_bytes,
    mlp_peak_bytes,
    predict_training_memory,
    saved_tensor_bytes,
)
from lecture_utils.widgets import memory_calculator

__all__ = [
    "DTYPES", "OPTIMIZER_STATE_COPIES", "RECIPES", "DtypeInfo", "TrainingMemory", "as_dtype",
    "bytes_per_param", "dtype_info", "dtype_name", "format_bytes", "max_params_that_fit",
    "measure_training_memory", "memory_calculator", "mlp_activation_bytes", "mlp_peak_bytes",
    "param_breakdown", "predict_training_memory", "recipe_name", "saved_tensor_bytes",
    "tensor_bytes", "training_state_table",
]
