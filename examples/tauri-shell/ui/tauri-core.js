// `@tauri-apps/api/core` for a page without a bundler: the same `invoke` and `Channel`, from the
// global API Tauri injects (`app.withGlobalTauri`). The import map in index.html points the
// plugin's guest API here.
export const { invoke, Channel } = window.__TAURI__.core
