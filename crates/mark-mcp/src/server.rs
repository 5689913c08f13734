//! The MCP face: an rmcp `ServerHandler` whose tools, resources and prompts
//! are thin adapters over the library functions (one per capability).

use crate::bound::fit;
use crate::context_reset::ContextReset;
use crate::envelope::ToolText;
use crate::explore::{ExploreParams, McpWatcher, explore_watched};
use crate::fetch::{FetchParams, fetch};
use crate::list::{ListParams, list};
use crate::lookup::{LookupParams, lookup_watched};
use crate::outbox::{DeliveryTransport, Outbox, collect};
use crate::reasons::{self, Reason, ToolCard};
use crate::session::Session;
use crate::versions::{VersionsParams, versions};
use crate::write::{AppendParams, ArchiveParams, PublishParams, append, archive, publish};
use crate::{prompts, resources};
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    PaginatedRequestParams, PromptMessage, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, ServerCapabilities,
    ServerConfig, SubscribeRequestParams, UnsubscribeRequestParams,
};
use rmcp::schemars::{self, JsonSchema};
use rmcp::service::RequestContext;
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt, prompt, prompt_handler, prompt_router, tool,
    tool_handler, tool_router,
};
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;

const FETCH: &str = "Read a markdown document or sections of it. Small documents come whole, large ones as an outline with #anchors: then fetch url#anchor (anchors: [..] for several). Text already read this session answers 'unchanged'; force=true re-sends it and skips the outline.";
const EXPLORE: &str = "Orient in a document in one call: outline (#anchors), opening, links out, backlinks, siblings. Then mark_fetch url#anchor. A '+N more' line's cursor pages that section.";
const LOOKUP: &str = "Search the catalog (titles, tags) or, with match=body, section text. Start here: the best-matching passages of the top hits come along; mark_fetch a hit's url#anchor for all of it.";
const LIST: &str = "List a folder's documents and subfolders (paged).";
const VERSIONS: &str = "A document's version history, newest first; fetch /path/vN for an old one.";
const PUBLISH: &str = "Write a new version of a document (the whole body). Without apply: a preview diff, nothing written; show it to the person, then call again with apply: true and expected_version from the preview (0 for a new document).";
const APPEND: &str = "Add markdown at the end of a document as a new version. Without apply: a preview diff; show it to the person, then apply: true with expected_version from the preview. Not idempotent: apply once.";
const ARCHIVE: &str = "Archive a document: it leaves listings; its versions stay readable. Without apply: a preview. No expected_version: apply archives whatever is current.";

const INSTRUCTIONS: &str = "Markdown knowledge base. Economical path: mark_lookup (or an outline from mark_fetch) first, then fetch only the sections you need as url#anchor. Cite facts as url#anchor.";

/// The MCP server of one session.
#[derive(Clone)]
pub struct MarkServer {
    session: Arc<Session>,
    /// Claude Code's compaction or clear, when a plugin started this server.
    context_reset: Option<Arc<ContextReset>>,
    /// What answered calls delivered, until their responses go out.
    outbox: Arc<Outbox>,
    /// Resource URIs the client subscribed to.
    subscriptions: Arc<crate::subscriptions::Subscriptions>,
    tool_router: ToolRouter<MarkServer>,
    prompt_router: PromptRouter<MarkServer>,
}

impl std::fmt::Debug for MarkServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MarkServer")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

/// The MCP form of a result: plain text within the whole-result bound,
/// `isError` for tool errors.
fn result(t: ToolText, page_bytes: usize) -> CallToolResult {
    let t = fit(t, page_bytes);
    let content = vec![ContentBlock::text(t.render())];
    if t.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// Runs a read tool's `work` unless `cancelled` completes first, then drops
/// it. rmcp answers `notifications/cancelled` only by cancelling the
/// request's token and discarding a late result: the handler runs on, its
/// requests stay in flight until `--timeout`, and a fetch that then lands
/// would mark text delivered that the client never saw. Dropping the work
/// drops its QUIC stream; every read records its delivery (and fills the
/// session cache) only after its last await, so nothing is left half done.
/// Writes are not cancelled this way: one whose request went out may land
/// anyway, and the session must still see its outcome.
async fn unless_cancelled(
    cancelled: impl Future<Output = ()>,
    work: impl Future<Output = ToolText>,
) -> ToolText {
    tokio::select! {
        biased;
        () = cancelled => ToolText::error("the call was cancelled"),
        text = work => text,
    }
}

/// Drops what costs every agent bytes on each `tools/list` and tells it
/// nothing: the `$schema` key of each input schema, empty defaults
/// (`null`, `false`, `[]`), number formats; and writes optional values and
/// enums the plain way (`"type": "string", "enum": [..]` rather than
/// `anyOf` with `null` and `oneOf` of `const`s), which every client reads.
fn compact_schemas(router: &mut ToolRouter<MarkServer>) {
    for route in router.map.values_mut() {
        let mut schema = (*route.attr.input_schema).clone();
        schema.remove("$schema");
        if let Some(Value::Object(props)) = schema.get_mut("properties") {
            for prop in props.values_mut() {
                if let Value::Object(prop) = prop {
                    simplify_property(prop);
                }
            }
        }
        route.attr.input_schema = Arc::new(schema);
    }
}

fn simplify_property(prop: &mut serde_json::Map<String, Value>) {
    let is_null = |v: &Value| v.get("type") == Some(&Value::from("null"));
    if let Some(Value::Array(any)) = prop.get("anyOf").cloned()
        && any.len() == 2
        && let Some(Value::Object(inner)) = any.iter().find(|v| !is_null(v))
    {
        prop.remove("anyOf");
        for (k, v) in inner {
            if k != "description" {
                prop.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    if let Some(Value::Array(one)) = prop.get("oneOf").cloned()
        && let Some(values) = one
            .iter()
            .map(|v| v.get("const").cloned())
            .collect::<Option<Vec<_>>>()
    {
        prop.remove("oneOf");
        prop.insert("type".into(), Value::from("string"));
        prop.insert("enum".into(), Value::Array(values));
    }
    if let Some(Value::Array(types)) = prop.get("type").cloned()
        && let [a, b] = types.as_slice()
    {
        let null = Value::from("null");
        let kept = if *b == null { a } else { b };
        if *a == null || *b == null {
            prop.insert("type".into(), kept.clone());
        }
    }
    prop.remove("format");
    let empty = |v: &Value| {
        v.is_null() || *v == Value::Bool(false) || v.as_array().is_some_and(Vec::is_empty)
    };
    if prop.get("default").is_some_and(empty) {
        prop.remove("default");
    }
}

/// Gives `router`'s tools the form `tools/list` sends: plain schemas, and
/// `_meta` on the always-loaded ones. The server and `mark-mcp tools` both
/// use it, so the sizes the latter prints are the real ones.
fn as_listed(router: &mut ToolRouter<MarkServer>) {
    compact_schemas(router);
    mark_always_loaded(router);
}

/// The tools Claude Code loads up front (the others it defers behind
/// ToolSearch, one more model turn before their first use).
const ALWAYS_LOADED: [&str; 3] = ["mark_lookup", "mark_fetch", "mark_explore"];

/// Marks the [`ALWAYS_LOADED`] tools with `_meta["anthropic/alwaysLoad"]`.
fn mark_always_loaded(router: &mut ToolRouter<MarkServer>) {
    for route in router.map.values_mut() {
        if ALWAYS_LOADED.contains(&route.attr.name.as_ref()) {
            let mut meta = rmcp::model::MetaObject::default();
            meta.0
                .insert("anthropic/alwaysLoad".into(), Value::Bool(true));
            route.attr.meta = Some(meta);
        }
    }
}

impl MarkServer {
    /// A server over `session`; `write` adds the write tools.
    pub fn new(session: Arc<Session>, write: bool) -> MarkServer {
        let mut tool_router = MarkServer::read_tools();
        if write {
            tool_router += MarkServer::write_tools();
        }
        as_listed(&mut tool_router);
        MarkServer {
            outbox: Arc::new(Outbox::new(Arc::clone(&session))),
            subscriptions: Arc::default(),
            session,
            context_reset: ContextReset::for_server().map(Arc::new),
            tool_router,
            prompt_router: MarkServer::prompt_router(),
        }
    }

    /// `inner` (stdio) wrapped so that a call's deliveries are recorded when
    /// its response is written, never for a response rmcp dropped (see
    /// [`crate::outbox`]). Serve over it: with another transport nothing is
    /// ever recorded as delivered.
    pub fn transport<T>(&self, inner: T) -> DeliveryTransport<T> {
        DeliveryTransport::new(inner, Arc::clone(&self.outbox))
    }

    /// Serves MCP over `read`/`write` (stdio, or a pipe in `demo`) through
    /// [`MarkServer::transport`], so deliveries are recorded as they go out.
    pub async fn serve_over<R, W>(
        self,
        read: R,
        write: W,
    ) -> Result<
        rmcp::service::RunningService<RoleServer, MarkServer>,
        rmcp::service::ServerInitializeError,
    >
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let inner = rmcp::transport::IntoTransport::<
            RoleServer,
            std::io::Error,
            rmcp::transport::async_rw::TransportAdapterAsyncRW,
        >::into_transport((read, write));
        let transport = self.transport(inner);
        self.serve(transport).await
    }
}

impl MarkServer {
    /// The MCP result of a read tool's `work`: first forgets what was
    /// delivered if the client dropped its context since the last call,
    /// then runs the work unless the call is cancelled.
    /// What it delivers is held for the response to request `id` (see
    /// [`crate::outbox`]).
    async fn read(
        &self,
        id: &rmcp::model::RequestId,
        cancelled: impl Future<Output = ()>,
        work: impl Future<Output = ToolText>,
    ) -> CallToolResult {
        if self.context_reset.as_ref().is_some_and(|r| r.take()) {
            tracing::info!("the client compacted or cleared its context: deliveries forgotten");
            self.session.log().forget_all();
        }
        let (text, deliveries) = collect(unless_cancelled(cancelled, work)).await;
        let text = crate::stale_note::close(&self.session, text, &deliveries).await;
        self.outbox.hold(id, deliveries);
        self.answer(text)
    }

    /// A write's MCP result, closed with the change note when there is news.
    async fn written(&self, text: ToolText) -> CallToolResult {
        let text = crate::stale_note::close(&self.session, text, &[]).await;
        self.answer(text)
    }

    fn answer(&self, t: ToolText) -> CallToolResult {
        result(t, self.session.settings().page_bytes)
    }

    /// The reasons of a registered tool (beside its registration below);
    /// empty for a tool that has none, which a test refuses.
    pub fn reasons(tool: &str) -> &'static [Reason] {
        match tool {
            "mark_fetch" => MarkServer::FETCH_REASONS,
            "mark_explore" => MarkServer::EXPLORE_REASONS,
            "mark_lookup" => MarkServer::LOOKUP_REASONS,
            "mark_list" => MarkServer::LIST_REASONS,
            "mark_versions" => MarkServer::VERSIONS_REASONS,
            "mark_publish" => MarkServer::PUBLISH_REASONS,
            "mark_append" => MarkServer::APPEND_REASONS,
            "mark_archive" => MarkServer::ARCHIVE_REASONS,
            _ => &[],
        }
    }

    /// Every tool, read group first, as `tools/list` sends it.
    fn cards_of(router: ToolRouter<MarkServer>, group: &'static str) -> Vec<ToolCard> {
        let mut router = router;
        as_listed(&mut router);
        let mut tools = router.list_all();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
            .into_iter()
            .map(|t| ToolCard {
                name: t.name.to_string(),
                group,
                reasons: MarkServer::reasons(&t.name),
                annotations: reasons::annotation_words(t.annotations.as_ref()),
                verb: format!("mark-mcp {}", t.name.trim_start_matches("mark_")),
                list_bytes: serde_json::to_string(&t).map_or(0, |j| j.len()),
            })
            .collect()
    }

    /// Every tool mark-mcp can offer, with its reasons (`mark-mcp tools`).
    pub fn tool_cards() -> Vec<ToolCard> {
        let mut cards = MarkServer::cards_of(MarkServer::read_tools(), "read");
        cards.extend(MarkServer::cards_of(MarkServer::write_tools(), "write"));
        cards
    }
}

#[tool_router(router = read_tools)]
impl MarkServer {
    /// Why mark_fetch is a tool. An outline or a section instead of a whole file, from a source the shell may not reach; read-only, so a client can allow it alone.
    const FETCH_REASONS: &[Reason] = &[
        Reason::NoShell,
        Reason::AnotherSource,
        Reason::BoundedResult,
        Reason::PermissionBoundary,
    ];
    #[tool(
        description = FETCH,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn mark_fetch(
        &self,
        Parameters(p): Parameters<FetchParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.read(
            &ctx.id,
            ctx.ct.cancelled(),
            fetch(&self.session, p, Instant::now()),
        )
        .await
    }

    /// Why mark_explore is a tool. The card waits on the session's link-graph crawl (state no one-shot command keeps).
    const EXPLORE_REASONS: &[Reason] = &[
        Reason::NoShell,
        Reason::AnotherSource,
        Reason::LongRunningState,
        Reason::BoundedResult,
        Reason::PermissionBoundary,
    ];
    #[tool(
        description = EXPLORE,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn mark_explore(
        &self,
        Parameters(p): Parameters<ExploreParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        // The card also watches the cancellation itself (through the
        // watcher) while it waits for a crawl; dropped, it stops the crawl.
        let (cancelled, id) = (ctx.ct.clone(), ctx.id.clone());
        let watcher = McpWatcher::new(ctx);
        self.read(
            &id,
            cancelled.cancelled(),
            explore_watched(&self.session, p, Instant::now(), &watcher),
        )
        .await
    }

    /// Why mark_lookup is a tool. Ranked one-line hits instead of grep output over every file.
    const LOOKUP_REASONS: &[Reason] = &[
        Reason::NoShell,
        Reason::AnotherSource,
        Reason::BoundedResult,
        Reason::PermissionBoundary,
    ];
    #[tool(
        description = LOOKUP,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn mark_lookup(
        &self,
        Parameters(p): Parameters<LookupParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        // Over a server without LOOKUP the search waits for the crawl,
        // watched as a card's wait is.
        let (cancelled, id) = (ctx.ct.clone(), ctx.id.clone());
        let watcher = McpWatcher::new(ctx);
        self.read(
            &id,
            cancelled.cancelled(),
            lookup_watched(&self.session, p, Instant::now(), &watcher),
        )
        .await
    }

    /// Why mark_list is a tool.
    const LIST_REASONS: &[Reason] = &[
        Reason::NoShell,
        Reason::AnotherSource,
        Reason::BoundedResult,
        Reason::PermissionBoundary,
    ];
    #[tool(
        description = LIST,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn mark_list(
        &self,
        Parameters(p): Parameters<ListParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.read(&ctx.id, ctx.ct.cancelled(), list(&self.session, p))
            .await
    }

    /// Why mark_versions is a tool.
    const VERSIONS_REASONS: &[Reason] = &[
        Reason::NoShell,
        Reason::AnotherSource,
        Reason::BoundedResult,
        Reason::PermissionBoundary,
    ];
    #[tool(
        description = VERSIONS,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn mark_versions(
        &self,
        Parameters(p): Parameters<VersionsParams>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.read(&ctx.id, ctx.ct.cancelled(), versions(&self.session, p))
            .await
    }
}

#[tool_router(router = write_tools)]
impl MarkServer {
    /// Why mark_publish is a tool. One document, previewed by default: narrower than a shell allowed to write files.
    const PUBLISH_REASONS: &[Reason] = &[
        Reason::NoShell,
        Reason::AnotherSource,
        Reason::PermissionBoundary,
    ];
    #[tool(
        description = PUBLISH,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn mark_publish(&self, Parameters(p): Parameters<PublishParams>) -> CallToolResult {
        self.written(publish(&self.session, p, Instant::now()).await)
            .await
    }

    /// Why mark_append is a tool.
    const APPEND_REASONS: &[Reason] = &[
        Reason::NoShell,
        Reason::AnotherSource,
        Reason::PermissionBoundary,
    ];
    #[tool(
        description = APPEND,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn mark_append(&self, Parameters(p): Parameters<AppendParams>) -> CallToolResult {
        self.written(append(&self.session, p, Instant::now()).await)
            .await
    }

    /// Why mark_archive is a tool.
    const ARCHIVE_REASONS: &[Reason] = &[
        Reason::NoShell,
        Reason::AnotherSource,
        Reason::PermissionBoundary,
    ];
    #[tool(
        description = ARCHIVE,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn mark_archive(&self, Parameters(p): Parameters<ArchiveParams>) -> CallToolResult {
        self.written(archive(&self.session, p, Instant::now()).await)
            .await
    }
}

/// Arguments of the `orient` prompt.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OrientArgs {
    /// Document or folder to get oriented in, e.g. /index.md.
    pub url: String,
}

/// Arguments of the `recall` prompt.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct RecallArgs {
    /// What to recall: a name, project or question.
    pub subject: String,
}

/// Arguments of the `whats-new` prompt.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WhatsNewArgs {
    /// A date like 2026-11-01 (default: the last week).
    #[serde(default)]
    pub since: Option<String>,
}

// rmcp's `#[prompt]` generates public `*_prompt_attr` functions without docs.
#[allow(missing_docs)]
#[prompt_router]
impl MarkServer {
    /// Get oriented in a document or folder, citing url#anchor.
    #[prompt(name = "orient")]
    async fn orient(&self, Parameters(a): Parameters<OrientArgs>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(Role::User, prompts::orient(&a.url))]
    }

    /// Recall what the knowledge base says about a subject, citing url#anchor.
    #[prompt(name = "recall")]
    async fn recall(&self, Parameters(a): Parameters<RecallArgs>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            prompts::recall(&a.subject),
        )]
    }

    /// Find what changed recently, citing url#anchor.
    #[prompt(name = "whats-new")]
    async fn whats_new(&self, Parameters(a): Parameters<WhatsNewArgs>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            prompts::whats_new(a.since.as_deref()),
        )]
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for MarkServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new("mark-mcp", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let listed = resources::list(&self.session)
            .await
            .map_err(|e| ErrorData::internal_error(e, None))?;
        let items = listed
            .into_iter()
            .map(|l| {
                let r = Resource::new(l.uri, l.path).with_mime_type("text/markdown");
                match l.description {
                    Some(d) => r.with_description(d),
                    None => r,
                }
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(items))
    }

    #[allow(
        deprecated,
        reason = "the subscribe of MCP before 2026-07-28, which clients speak today"
    )]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions
            .subscribe(&self.session, &request.uri, context.peer)
            .map_err(|e| ErrorData::invalid_params(e, None))
    }

    #[allow(deprecated, reason = "see subscribe")]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions.unsubscribe(&self.session, &request.uri);
        Ok(())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let template = ResourceTemplate::new(
            format!("{}/{{+path}}", self.session.source().origin()),
            "document",
        )
        .with_description("A markdown document; add #anchor for one section.")
        .with_mime_type("text/markdown");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let text = resources::read(&self.session, &request.uri, Instant::now())
            .await
            .map_err(|failure| match failure {
                resources::ReadFailure::BadUri(e) => ErrorData::invalid_params(e, None),
                resources::ReadFailure::NotFound(e) => ErrorData::resource_not_found(e, None),
                resources::ReadFailure::Failed(e) => ErrorData::internal_error(e, None),
            })?;
        let contents = ResourceContents::text(text, request.uri).with_mime_type("text/markdown");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::Cli;
    use clap::CommandFactory;
    use std::collections::BTreeSet;

    #[tokio::test]
    async fn work_that_ends_first_gives_its_result() {
        let text = unless_cancelled(std::future::pending(), async { ToolText::new("ok") }).await;
        assert_eq!((text.status.as_str(), text.is_error), ("ok", false));
    }

    /// Held by the work; says whether the work was dropped.
    struct DropFlag(Arc<std::sync::atomic::AtomicBool>);
    impl Drop for DropFlag {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_cancellation_drops_the_work_and_answers_an_error() {
        let dropped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = DropFlag(Arc::clone(&dropped));
        let work = async move {
            let _held = flag;
            std::future::pending::<ToolText>().await
        };
        let text = unless_cancelled(std::future::ready(()), work).await;
        assert!(text.is_error, "{}", text.render());
        assert!(dropped.load(std::sync::atomic::Ordering::SeqCst));
    }

    /// Every tool says why it is a tool (issue #18).
    #[test]
    fn every_tool_has_a_reason() {
        let router = MarkServer::read_tools() + MarkServer::write_tools();
        for tool in router.list_all() {
            assert!(
                !MarkServer::reasons(&tool.name).is_empty(),
                "{} has no reason to be a tool: add its REASONS beside its #[tool]",
                tool.name
            );
        }
        assert_eq!(MarkServer::reasons("mark_unknown"), &[] as &[Reason]);
        let cards = MarkServer::tool_cards();
        assert_eq!(cards.len(), 8);
        assert!(
            cards
                .iter()
                .all(|c| c.list_bytes > 100 && !c.reasons.is_empty())
        );
    }

    /// Every tool is also a CLI verb (`mark_fetch` → `fetch`) taking exactly
    /// the same parameters.
    #[test]
    fn every_tool_has_its_verb_with_the_same_parameters() {
        let mut router = MarkServer::read_tools() + MarkServer::write_tools();
        compact_schemas(&mut router);
        let tools = router.list_all();
        assert_eq!(tools.len(), 8);
        let cli = Cli::command();
        let globals: BTreeSet<String> = cli
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect();
        for tool in tools {
            let verb = tool.name.strip_prefix("mark_").unwrap();
            let sub = cli
                .find_subcommand(verb)
                .unwrap_or_else(|| panic!("no verb for {}", tool.name));
            let schema_props: BTreeSet<String> = tool.input_schema["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            let verb_args: BTreeSet<String> = sub
                .get_arguments()
                .map(|a| a.get_id().to_string())
                .filter(|id| id != "help" && !globals.contains(id))
                .collect();
            assert_eq!(schema_props, verb_args, "{}", tool.name);
            assert_eq!(tool.input_schema["type"], "object");
            assert!(tool.input_schema.get("$schema").is_none());
        }
    }
}
