// The serde shapes (camelCase JSON) of the runtime's types that a shell's webview works with
// most: runs, events, commits, approvals, the agent tree. The full list of event payloads is
// docs/events.md; fields this file does not name are still present on the objects.
export {};
