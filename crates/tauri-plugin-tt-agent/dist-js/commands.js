// The host command table, typed: each command's [request, answer]. `null` as the request: the
// command takes none. A test (tests/permissions.rs) holds the keys equal to
// `tt_runtime::HOST_COMMANDS`. The answers this file does not spell out yet (usage, a
// conversation, a task record, records, pending requests, MCP servers) are `Json`; their shapes
// are in docs/host-api.md.
export {};
