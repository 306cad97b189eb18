//! The committed `dist-js/` is what the npm `typescript` compiler pinned in `package.json`
//! makes of `guest-js/`: rebuilt into a temporary dir and compared file by file. The compiler
//! comes from `npm ci` in the plugin's dir (`.ci/run` does it); where it is missing the check
//! says so and does nothing.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::support::PLUGIN_DIR;

fn files(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&path).unwrap())
        })
        .collect()
}

#[test]
fn dist_js_is_the_build_of_guest_js() {
    let tsc = Path::new(PLUGIN_DIR).join("node_modules/.bin/tsc");
    if !tsc.exists() {
        eprintln!(
            "not checked: no TypeScript compiler at {} (run `npm ci` in crates/tauri-plugin-tt-agent)",
            tsc.display()
        );
        return;
    }
    let built = tempfile::tempdir().unwrap();
    let status = Command::new(&tsc)
        .args(["-p", "tsconfig.json", "--outDir"])
        .arg(built.path())
        .current_dir(PLUGIN_DIR)
        .status()
        .unwrap();
    assert!(status.success(), "tsc failed on guest-js ({status})");
    let committed = files(&Path::new(PLUGIN_DIR).join("dist-js"));
    let fresh = files(built.path());
    assert_eq!(
        committed.keys().collect::<Vec<_>>(),
        fresh.keys().collect::<Vec<_>>(),
        "dist-js holds other files than tsc writes"
    );
    for (name, text) in &fresh {
        assert!(
            committed[name] == *text,
            "dist-js/{name} is stale: run `npm run build` in crates/tauri-plugin-tt-agent and commit it"
        );
    }
}
