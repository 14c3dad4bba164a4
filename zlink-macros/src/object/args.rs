//! The arguments of `#[spot(...)]` and `#[actor(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::{Ident, LitStr, Path, Type};

use super::ObjectKind;
use crate::attr_keys::{self, set_once};
use crate::{crate_path, names};

/// The relocation policy an object type declares.
pub(crate) enum Policy {
    Disable,
    Recreate,
    /// Kept across a move by the type's `RelocationState` adapter; the span is the
    /// attribute's, where a missing adapter is reported.
    Preserve(proc_macro2::Span),
}

/// What `#[spot(type = "...", relocation = ..., client = Name, crate = "...")]` (or the
/// same for `#[actor]`) declares.
pub(crate) struct ObjectArgs {
    /// The stable type name, validated.
    pub(crate) stable_type: String,
    /// The relocation policy (mandatory).
    pub(crate) policy: Policy,
    /// The generated client's type name, when the user renames it.
    pub(crate) client: Option<Ident>,
    /// A Spot's member Actor type (`actors = Player`), when it takes Actors.
    pub(crate) actors: Option<Path>,
    /// A Spot's creation arguments (`create = OpenRoom`), when it declares them.
    pub(crate) create: Option<Type>,
    /// An Instance Spot type (`instance`): its Spots are activated by their first message.
    pub(crate) instance: Option<proc_macro2::Span>,
    /// `on_owner_lost = reclaim`: callers reclaim an object whose owner's lease died.
    pub(crate) reclaim_on_owner_lost: Option<proc_macro2::Span>,
    /// The path generated code uses for the runtime crate.
    pub(crate) krate: Path,
}

const EXPECTED: &str = "expected `type = \"stable-type\"`, `relocation = disable | recreate | preserve`, `actors = ActorType`, `create = ArgsType` and `instance` (Spots), `on_owner_lost = unavailable | reclaim`, `client = ClientTypeName` or `crate = \"path\"`";

impl ObjectArgs {
    pub(crate) fn parse(tokens: TokenStream, kind: &ObjectKind) -> syn::Result<Self> {
        let ObjectKind {
            attr_name: attr,
            noun,
            example_type: example,
            ..
        } = kind;
        let mut stable_type: Option<LitStr> = None;
        let mut policy: Option<Policy> = None;
        let mut client: Option<Ident> = None;
        let mut actors: Option<Path> = None;
        let mut create: Option<Type> = None;
        let mut instance: Option<proc_macro2::Span> = None;
        let mut krate: Option<Path> = None;
        let mut owner_lost: Option<Option<proc_macro2::Span>> = None;
        let parser = syn::meta::parser(|meta| {
            match attr_keys::key(&meta).as_str() {
            "type" => set_once(&mut stable_type, &meta, |m| {
                m.value()?.parse::<LitStr>().map_err(|e| {
                    syn::Error::new(
                        e.span(),
                        format!("the stable type must be a string literal, e.g. type = \"{example}\""),
                    )
                })
            }),
            "relocation" => set_once(&mut policy, &meta, |m| {
                let value: Ident = m.value()?.parse()?;
                match value.to_string().as_str() {
                    "disable" => Ok(Policy::Disable),
                    "recreate" => Ok(Policy::Recreate),
                    "preserve" => Ok(Policy::Preserve(value.span())),
                    _ => Err(syn::Error::new(
                        value.span(),
                        "relocation is `disable` (never moved), `recreate` (a fresh instance on the target) or `preserve` (state kept by the type's `RelocationState` adapter)",
                    )),
                }
            }),
            "client" => set_once(&mut client, &meta, |m| m.value()?.parse()),
            "actors" if *noun == "Spot" => set_once(&mut actors, &meta, |m| m.value()?.parse()),
            "actors" => Err(meta.error(
                "`actors` belongs to #[spot(...)]: it names the Actor type a Spot takes as members",
            )),
            "create" if *noun == "Spot" => set_once(&mut create, &meta, |m| m.value()?.parse()),
            "create" => Err(meta.error(
                "`create` belongs to #[spot(...)]: an Actor's creation carries no arguments",
            )),
            "instance" if *noun == "Spot" => set_once(&mut instance, &meta, |m| {
                if m.input.peek(syn::Token![=]) {
                    return Err(m.error("`instance` is a flag: #[spot(type = \"match\", relocation = disable, instance)]"));
                }
                Ok(m.path.span())
            }),
            "instance" => Err(meta.error(
                "`instance` belongs to #[spot(...)]: it makes an Instance Spot type, activated by its first message",
            )),
            "on_owner_lost" => set_once(&mut owner_lost, &meta, |m| {
                let value: Ident = m.value()?.parse()?;
                match value.to_string().as_str() {
                    "unavailable" => Ok(None),
                    "reclaim" => Ok(Some(value.span())),
                    _ => Err(syn::Error::new(
                        value.span(),
                        "on_owner_lost is `unavailable` (the default: an object whose owner died stays Unavailable until an operator reclaims it) or `reclaim` (a caller that finds its owner's lease expired reclaims it and creates it anew)",
                    )),
                }
            }),
            "crate" => set_once(&mut krate, &meta, crate_path::parse),
            "server" => Err(meta.error(format!(
                "`server` belongs to #[channel(server)]; a{} {noun} declares `type` and `relocation`",
                if noun.starts_with('A') { "n" } else { "" }
            ))),
            _ => Err(meta.error(format!("unknown key in #[{attr}(...)]; {EXPECTED}"))),
        }
        });
        parser.parse2(tokens)?;
        let Some(stable_type) = stable_type else {
            return Err(syn::Error::new(
                Span::call_site(),
                format!("#[{attr}(...)] needs its stable type: #[{attr}(type = \"{example}\", relocation = disable)]"),
            ));
        };
        let Some(policy) = policy else {
            return Err(syn::Error::new(
                Span::call_site(),
format!("#[{attr}(...)] needs exactly one relocation policy: `relocation = disable`, `relocation = recreate` or `relocation = preserve`"),
            ));
        };
        Ok(ObjectArgs {
            stable_type: names::check(&stable_type, "the stable type")?,
            policy,
            client,
            actors,
            create,
            instance,
            reclaim_on_owner_lost: owner_lost.flatten(),
            krate: krate.unwrap_or_else(crate_path::default_path),
        })
    }
}
