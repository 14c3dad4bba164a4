//! Spots and Actors by global ID over real TCP on 127.0.0.1 and a real `redis-server`:
//! creation, turns, timers, membership, hostile object traffic, and live relocation with
//! Message Follow.

mod actors;
mod caller_turns;
mod instance_spots;
mod lifecycle_in_block;
mod membership;
mod multicast;
mod object_attacks;
mod relocation;
mod relocation_failures;
mod relocation_load;
mod relocation_order;
mod spot_timers;
mod spot_wide_relocation;
mod spots;
mod timing;
