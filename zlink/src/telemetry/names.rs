//! The names of zlink's instruments: `zlink_<surface>_<name>`, with the unit in the name.
//! The book's "Operating zlink" chapter lists them with their labels.

/// Gauge: calls started by the application and not yet ended. Labels: `surface`.
pub const CALLS_IN_FLIGHT: &str = "zlink_calls_in_flight";
/// Counter: calls the application made. Labels: `surface`, `kind`, `outcome`.
pub const CALLS: &str = "zlink_calls_total";
/// Histogram (seconds): a request's time from the caller's side. Labels: `surface`,
/// `outcome`.
pub const CALL_DURATION: &str = "zlink_call_duration_seconds";
