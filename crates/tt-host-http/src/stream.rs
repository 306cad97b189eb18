//! `GET /api/runs/{runId}/stream`: a run's events as Server-Sent Events, live, resumable;
//! `GET /api/run-updates`: the runs list's changes as Server-Sent Events.
//!
//! Each journal event is one SSE message whose `id` is its seq and whose `data` is the event's
//! JSON. A client resumes after a seq with `?after=` or, on an automatic reconnect, with the
//! `Last-Event-ID` header (the larger wins). After the run's terminal event the server sends
//! one `event: end` message and closes; a failure of the stream is an `event: stream_error`
//! message with `{code, message}`. When the server stops, open streams end without `end`
//! (a reconnecting client resumes from its last seq).

use std::convert::Infallible;
use std::time::Duration;
use tt_runtime::error_codes;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use futures_util::stream::{self, Stream};
use serde::Deserialize;
use tt_runtime::{EventSubscription, RunUpdate, RunUpdates};

use crate::error::ApiError;
use crate::extract::{AppState, PathParams, QueryParams, valid_id};

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct StreamQuery {
    after: Option<u64>,
    invocation: Option<String>,
    token: Option<String>,
}

pub(crate) async fn stream(
    State(state): State<AppState>,
    path: PathParams,
    headers: HeaderMap,
    QueryParams(query): QueryParams<StreamQuery>,
) -> Result<Response, ApiError> {
    let _ = query.token;
    let run_id = path.run_id()?;
    if let Some(invocation) = &query.invocation {
        valid_id("invocation", invocation)?;
    }
    let last_event_id = match headers.get("last-event-id") {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    ApiError::bad_request(
                        error_codes::HTTP_INVALID_LAST_EVENT_ID,
                        "Last-Event-ID is a seq",
                    )
                })?,
        ),
    };
    let after = query.after.unwrap_or(0).max(last_event_id.unwrap_or(0));
    // Reading the first page up front turns an unknown run into a 404 instead of a stream
    // that fails at once.
    state
        .runtime
        .read_events(tt_runtime::ReadEventsRequest {
            run_id: run_id.clone(),
            limit: Some(1),
            ..Default::default()
        })
        .await?;
    let subscription = state.runtime.subscribe(&run_id, after, query.invocation);
    Ok(until_stopped(&state, events(subscription)))
}

/// `messages` as an SSE response with a keep-alive comment every 15 s, ended when the server
/// stops.
fn until_stopped(
    state: &AppState,
    messages: impl Stream<Item = Result<Event, Infallible>> + Send + 'static,
) -> Response {
    let mut stopping = state.stopping.clone();
    let stopped = async move {
        let _ = stopping.wait_for(|stopping| *stopping).await;
    };
    Sse::new(messages.take_until(stopped))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

enum Phase {
    Live(Box<EventSubscription>),
    Done,
}

fn events(subscription: EventSubscription) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(Phase::Live(Box::new(subscription)), |phase| async move {
        let Phase::Live(mut subscription) = phase else {
            return None;
        };
        let message = match EventSubscription::next(&mut subscription).await {
            Ok(Some(event)) => match serde_json::to_string(&event) {
                Ok(json) => {
                    return Some((
                        Ok(Event::default().id(event.seq.to_string()).data(json)),
                        Phase::Live(subscription),
                    ));
                }
                Err(err) => unserializable(&err),
            },
            Ok(None) => Event::default().event("end").data("{}"),
            Err(err) => error_event(&err.code, &err.message),
        };
        Some((Ok(message), Phase::Done))
    })
}

/// The `stream_error` of a message that could not be written as JSON.
fn unserializable(err: &serde_json::Error) -> Event {
    error_event(
        error_codes::HTTP_EVENT_UNSERIALIZABLE.as_str(),
        &err.to_string(),
    )
}

fn error_event(code: &str, message: &str) -> Event {
    let body = serde_json::json!({ "code": code, "message": message });
    Event::default()
        .event("stream_error")
        .data(body.to_string())
}

/// `GET /api/run-updates`: each run that starts or changes status is one message whose `data`
/// is the run (as `GET /api/runs/{id}` returns it); `event: lagged` says changes were skipped
/// and the client should re-read `GET /api/runs`. Runs another process writes are not in it.
pub(crate) async fn run_updates(State(state): State<AppState>) -> Result<Response, ApiError> {
    let updates = state.runtime.run_updates()?;
    Ok(until_stopped(&state, run_update_events(updates)))
}

fn run_update_events(updates: RunUpdates) -> impl Stream<Item = Result<Event, Infallible>> {
    stream::unfold(updates, |mut updates| async move {
        let message = match updates.next().await? {
            RunUpdate::Changed(run) => match serde_json::to_string(&run) {
                Ok(json) => Event::default().data(json),
                Err(err) => unserializable(&err),
            },
            // `RunUpdate` may grow: anything unknown is best answered by a re-read.
            _ => Event::default().event("lagged").data("{}"),
        };
        Some((Ok(message), updates))
    })
}
