//! The object layer as a [`Handle`](crate::handle::Handle) reaches it: the
//! [`ObjectPort`] of one node's [`ObjectServer`].

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::direct;
use super::server::ObjectServer;
use crate::address::{Location, ObjectKey, ObjectKind, Outcome};
use crate::call::BoxFuture;
use crate::handle::{ObjectMessage, ObjectPort, Started};
use crate::Result;

impl ObjectPort for ObjectServer {
    fn start_object_call<'a>(&'a self, message: ObjectMessage<'a>) -> Started<'a> {
        direct::start(&self.core, &*self.core, message)
    }

    fn timing(&self) -> (Duration, Duration) {
        ObjectServer::timing(self)
    }

    fn set_timing(&self, max_age: Option<Duration>, follow: Option<Duration>) -> Result<()> {
        ObjectServer::set_timing(self, max_age, follow)
    }

    fn sole_instance_type(&self) -> Result<crate::address::StableType> {
        super::instance_spot::sole_instance_type(&self.env, &self.registry)
    }

    fn publish<'a>(
        &'a self,
        channel: &'a str,
        topic: &'a str,
        packet: &'a str,
        payload: Bytes,
        metadata: crate::wire::Metadata,
        send_timeout: Duration,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(super::multicast::publish(
            &self.core,
            &self.multicast,
            super::multicast::Event {
                channel,
                topic,
                packet,
                payload,
                metadata,
                send_timeout,
            },
        ))
    }

    fn create_object<'a>(
        self: Arc<Self>,
        key: ObjectKey,
        stable_type: &'a str,
        request: Bytes,
        timeout: Duration,
        must_be_new: bool,
    ) -> BoxFuture<'a, Result<Outcome>> {
        Box::pin(async move {
            self.create(key, stable_type, request, timeout, must_be_new)
                .await
        })
    }

    fn push_to_session<'a>(
        self: Arc<Self>,
        key: ObjectKey,
        generation: u64,
        codec: u8,
        packet: &'a str,
        payload: Bytes,
    ) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            super::binding::push_bound(&self.bindings, &key, generation, codec, packet, payload)
                .await
        })
    }

    fn find_object<'a>(
        self: Arc<Self>,
        key: &'a ObjectKey,
    ) -> BoxFuture<'a, Result<Option<Location>>> {
        Box::pin(async move { self.find(key).await })
    }

    fn close_object<'a>(
        self: Arc<Self>,
        key: &'a ObjectKey,
        generation: u64,
    ) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move { self.close(key, generation).await })
    }

    fn placement_nodes(&self, kind: ObjectKind, stable_type: &str) -> Vec<String> {
        super::creation::ready_nodes(self, kind, stable_type)
    }

    fn wait_placement<'a>(
        self: Arc<Self>,
        kind: ObjectKind,
        stable_type: &'a str,
        nodes: usize,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<()>> {
        let until = tokio::time::Instant::now() + timeout;
        Box::pin(async move {
            super::creation::wait_ready(&self, kind, stable_type, nodes, until).await
        })
    }

    fn relocate_object<'a>(
        self: Arc<Self>,
        key: &'a ObjectKey,
        to: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Location>> {
        Box::pin(async move { self.relocate(key, to).await })
    }
}
