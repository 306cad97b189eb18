//! The codes of the host command table (`host.*`: a command that does not exist or a request
//! that does not fit it, on every surface) and of the host HTTP server (`http.*`: a request
//! refused before it reached the runtime). The runtime's own codes pass through unchanged.

super::error_codes! {
    HOST_COMMAND_UNKNOWN = "host.command_unknown", HostContract,
        "No host command has that name (`HOST_COMMANDS` lists them).";
    HOST_REQUEST_INVALID = "host.request_invalid", HostContract,
        "A host command's request is not the JSON that command takes (a missing or unknown field, a wrong type).";
    HOST_TOOL_CALL_NOT_PENDING = "host.tool_call_not_pending", HostContract,
        "No call of a host-answered tool is waiting under that run and call key (answered, cancelled or never made).";
    HTTP_BODY_TOO_LARGE = "http.body_too_large", HostContract,
        "The request body is larger than the server accepts.";
    HTTP_BODY_UNREADABLE = "http.body_unreadable", HostContract,
        "The request body could not be read.";
    HTTP_EVENT_UNSERIALIZABLE = "http.event_unserializable", Internal,
        "An event of the stream could not be written as JSON; the stream sends this error in its place.";
    HTTP_HOST_REFUSED = "http.host_refused", HostContract,
        "The `Host` header does not name this server (a DNS-rebinding guard).";
    HTTP_INVALID_ID = "http.invalid_id", HostContract,
        "An id in the path is not a valid id.";
    HTTP_INVALID_JSON = "http.invalid_json", HostContract,
        "The request body is not the JSON the endpoint takes.";
    HTTP_INVALID_LAST_EVENT_ID = "http.invalid_last_event_id", HostContract,
        "`Last-Event-ID` is not a seq.";
    HTTP_INVALID_PATH = "http.invalid_path", HostContract,
        "The request path does not fit the route.";
    HTTP_INVALID_QUERY = "http.invalid_query", HostContract,
        "The query string does not fit the endpoint.";
    HTTP_INVALID_REQUEST = "http.invalid_request", HostContract,
        "The request is well-formed JSON but misses something the endpoint needs.";
    HTTP_ORIGIN_REFUSED = "http.origin_refused", HostContract,
        "The `Origin` header names another site.";
    HTTP_ROUTE_NOT_FOUND = "http.route_not_found", HostContract,
        "No endpoint has that method and path.";
    HTTP_TOKEN_INVALID = "http.token_invalid", HostContract,
        "The server's secret token was given but is wrong.";
    HTTP_TOKEN_MISSING = "http.token_missing", HostContract,
        "The server's secret token was not given (header or `?token=`).";
    HTTP_UNSUPPORTED_MEDIA_TYPE = "http.unsupported_media_type", HostContract,
        "The request body is not `application/json`.";
}
