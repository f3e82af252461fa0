"""The scaler's service, one per container."""

from functools import lru_cache

from shortener.loops.scaling import LoopScaler
from shortener.services.loops import loop_scaler
from shortener.settings import scaler_settings


@lru_cache(maxsize=1)
def scaler() -> LoopScaler:
    return loop_scaler(scaler_settings())
