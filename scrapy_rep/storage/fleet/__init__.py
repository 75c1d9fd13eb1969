"""A fleet's places in its download slots (Redis ``REP_STORE``): ``RedisPlaces``."""

from scrapy_rep.storage.fleet._redis import (
    FLEET_TTL,
    FleetState,
    RedisPlaces,
    SlotLimits,
    fleet_state,
    open_places,
)

__all__ = ["FLEET_TTL", "FleetState", "RedisPlaces", "SlotLimits", "fleet_state", "open_places"]
