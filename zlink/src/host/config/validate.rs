//! Collects configuration violations so `build()` can report them all at once.

use std::collections::HashMap;
use std::time::Duration;

use crate::call::PacketKind;
use crate::handler::HandlerGroup;
use crate::mesh::MAX_WEIGHT;
use crate::{ConfigViolation, Error, Result};

const MAX_NAME_BYTES: usize = 255;

#[derive(Default)]
pub(crate) struct Validator {
    violations: Vec<ConfigViolation>,
}

impl Validator {
    pub(crate) fn violation(&mut self, setting: impl Into<String>, problem: impl Into<String>) {
        self.violations.push(ConfigViolation {
            setting: setting.into(),
            problem: problem.into(),
        });
    }

    /// A required or optional name: 1..=255 UTF-8 bytes.
    pub(crate) fn text(
        &mut self,
        setting: &str,
        value: Option<&str>,
        required: bool,
    ) -> Option<String> {
        match value {
            None if required => {
                self.violation(setting, "is required");
                None
            }
            None => None,
            Some(v) if v.is_empty() || v.len() > MAX_NAME_BYTES => {
                self.violation(
                    setting,
                    format!("must be 1..={MAX_NAME_BYTES} bytes, got {}", v.len()),
                );
                None
            }
            Some(v) => Some(v.to_string()),
        }
    }

    /// `scheme://host:port` with a numeric port.
    pub(crate) fn endpoint(&mut self, setting: &str, value: Option<&str>) -> Option<String> {
        let Some(value) = value else {
            self.violation(setting, "is required");
            return None;
        };
        let ok = value.split_once("://").is_some_and(|(scheme, rest)| {
            !scheme.is_empty()
                && rest
                    .rsplit_once(':')
                    .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
        });
        if ok {
            Some(value.to_string())
        } else {
            self.violation(setting, format!("{value:?} is not scheme://host:port"));
            None
        }
    }

    /// A wildcard bind needs an advertised host, and an advertised host is never a wildcard.
    pub(crate) fn advertising(&mut self, setting: &str, listen: Option<&str>, host: Option<&str>) {
        let wildcard = listen.is_some_and(crate::link::binds_wildcard);
        match host {
            None if wildcard => self.violation(
                setting,
                "binds a wildcard host: set an advertise host that peers can dial",
            ),
            Some(h) if h.is_empty() || matches!(h, "0.0.0.0" | "::" | "[::]" | "*") => {
                self.violation(setting, format!("advertise host {h:?} is not dialable"))
            }
            _ => {}
        }
    }

    pub(crate) fn weight(&mut self, channel: &str, weight: u32) {
        if weight > MAX_WEIGHT {
            self.violation(
                format!("channel {channel:?} weight"),
                format!("{weight} is outside 0..={MAX_WEIGHT}"),
            );
        }
    }

    pub(crate) fn positive(&mut self, setting: &str, d: Duration) {
        if d.is_zero() {
            self.violation(setting, "must be greater than zero");
        }
    }

    /// Packet names of a handler group: valid names, each at most once.
    pub(crate) fn handler_packets(
        &mut self,
        owner: &str,
        handlers: &dyn HandlerGroup,
    ) -> HashMap<String, PacketKind> {
        let mut kinds = HashMap::new();
        for (packet, kind) in handlers.packets() {
            if packet.is_empty() || packet.len() > MAX_NAME_BYTES {
                self.violation(
                    format!("{owner} packet {packet:?}"),
                    "name must be 1..=255 bytes",
                );
            }
            if kinds.insert(packet.clone(), kind).is_some() {
                self.violation(format!("{owner} packet {packet:?}"), "has two handlers");
            }
        }
        kinds
    }

    pub(crate) fn finish(self) -> Result<()> {
        if self.violations.is_empty() {
            Ok(())
        } else {
            Err(Error::Config(self.violations))
        }
    }
}
