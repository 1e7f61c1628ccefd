"""Layer 2: where programs run. Host devices, the persistent compilation cache, sharding over a device mesh,
multi-host start-up, and the cost model that plans a run before it starts."""
