//! Tauri's app build: embeds the page and the config, and resolves the window's capability
//! against the plugin's permissions.

fn main() {
    tauri_build::build();
}
