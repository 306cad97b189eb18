// The host command table, typed: each command's [request, answer]. `null` as the request: the
// command takes none. A test (tests/permissions.rs) holds the keys equal to
// `tt_runtime::HOST_COMMANDS`, and one (tests/ts_types.rs) holds each answer type's fields
// equal to what the Rust type serializes. `Json` is left only where the runtime answers JSON
// of no fixed shape (a run's OTLP export, a stored failure payload).
export {};
