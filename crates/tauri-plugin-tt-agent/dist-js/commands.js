// The host command table, typed: each command's [request, answer] (`null`: no request).
// A test holds its keys equal to `tt_runtime::HOST_COMMANDS`.
export {};
