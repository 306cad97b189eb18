//! The inspector page at laptop and phone widths, and the context and navigation it gives, in
//! the same headless Chromium as `browser.rs`: no sideways scroll and every control reachable
//! at 400 to 1,920 px; a failed run's code and reason in its head; approvals in the
//! conversation; agents labelled by their task and filtered and folded; a cancelled call's bar
//! ended; a branch's waterfall on its own axis with its fork point. Screenshots go to
//! `$CARGO_TARGET_TMPDIR/inspector-screens/`.

use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tt_runtime::CommitBridgeChoice;

use crate::browser::{
    Browser, approval_server, branching_writer, fanout_script, journal, last_event,
    writers_room_server,
};
use crate::support::{install_profiles, server};

/// The widths the page must work at: a phone, a desktop app's side pane, laptops and wide
/// desktops.
const WIDTHS: [u32; 7] = [360, 400, 800, 1024, 1366, 1920, 2560];

/// The controls a person needs on a run, by selector.
const CONTROLS: [&str; 4] = [
    "#cancel-run",
    "#send-guidance",
    "#all-agents",
    "#start-button",
];

/// For each control (and each tab): whether it is on screen, unhidden and the element a
/// click at its centre lands on. On a one-column page (760 px and less) the page scrolls down
/// to it first, as a person would; wider pages must show it without scrolling.
const REACHABLE: &str = r#"((selectors) => {
  const narrow = window.innerWidth <= 760, problems = [];
  const tabs = [...document.querySelectorAll('#tabs button')].map((b) => '#tabs button[data-tab=' + b.dataset.tab + ']');
  for (const sel of selectors.concat(tabs)) {
    const e = document.querySelector(sel);
    if (!e) { problems.push(sel + ': missing'); continue; }
    const seen = () => {
      const r = e.getBoundingClientRect();
      if (r.width < 4 || r.height < 4 || r.left < 0 || r.right > window.innerWidth || r.top < 0 || r.bottom > window.innerHeight) return false;
      const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return !!hit && (hit === e || e.contains(hit));
    };
    if (seen()) continue;
    if (narrow) { e.scrollIntoView({ block: 'center', inline: 'nearest' }); if (seen()) continue; }
    const r = e.getBoundingClientRect();
    problems.push(sel + ' at ' + [r.left, r.top, r.right, r.bottom].map(Math.round).join(','));
  }
  window.scrollTo(0, 0);
  return problems;
})"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_fits_every_width_from_400_to_1920_px_with_every_control_reachable() {
    let server = writers_room_server().await;
    let (browser, _) = Browser::start_run("layout", &server.url, "writer").await;
    browser
        .wait_for(
            "the run head's controls",
            "!!document.getElementById('send-guidance') && document.querySelectorAll('.agent-row').length >= 1",
        )
        .await;
    let controls = serde_json::to_string(&CONTROLS).unwrap();
    for width in WIDTHS {
        let height = if width <= 800 {
            800
        } else {
            768.max(width * 9 / 16)
        };
        browser.resize(width, height).await;
        // Two frames: the layout has settled when the checks run.
        browser
            .eval("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
            .await;
        let fits = browser
            .eval("[document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]")
            .await;
        browser.screenshot(&format!("{width:04}-timeline")).await;
        assert!(
            fits[0].as_u64() <= fits[2].as_u64() && fits[1].as_u64() <= fits[2].as_u64(),
            "the page scrolls sideways at {width} px: {fits}"
        );
        let problems = browser.eval(&format!("{REACHABLE}({controls})")).await;
        assert_eq!(problems, json!([]), "controls out of reach at {width} px");
        // The run's detail is not a sliver: at least 45% of a wide page, all of a narrow one.
        let detail = browser
            .eval("document.getElementById('detail').getBoundingClientRect().width / window.innerWidth")
            .await
            .as_f64()
            .unwrap();
        let least = if width <= 760 { 0.9 } else { 0.45 };
        assert!(detail >= least, "the detail is {detail:.2} of {width} px");
        // No tab widens the page either.
        let wide = browser
            .eval(
                "(async () => { const wide = []; \
                 for (const b of document.querySelectorAll('#tabs button')) { b.click(); \
                   await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))); \
                   if (document.documentElement.scrollWidth > window.innerWidth) wide.push(b.dataset.tab + ': ' + document.documentElement.scrollWidth); } \
                 return wide; })()",
            )
            .await;
        assert_eq!(wide, json!([]), "tabs that widen the page at {width} px");
        browser.click("#tabs button[data-tab=waterfall]").await;
        browser
            .eval("new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))")
            .await;
        browser.screenshot(&format!("{width:04}-waterfall")).await;
        browser.click("#tabs button[data-tab=timeline]").await;
    }
    // The panels fold: at 1,024 px, the runs list and the agent tree give their room to the run.
    browser.resize(1024, 768).await;
    let before = browser
        .eval("document.getElementById('detail').getBoundingClientRect().width")
        .await
        .as_f64()
        .unwrap();
    browser.click("#fold-runs").await;
    browser.click("#fold-agents").await;
    browser
        .wait_for(
            "both panels folded",
            &format!(
                "document.getElementById('detail').getBoundingClientRect().width > {before} + 300 \
                 && document.getElementById('runs-list').offsetParent === null \
                 && document.getElementById('tree').offsetParent === null"
            ),
        )
        .await;
    let problems = browser.eval(&format!("{REACHABLE}({controls})")).await;
    assert_eq!(
        problems,
        json!([]),
        "controls out of reach with the panels folded"
    );
    browser.screenshot("1024-folded").await;
    browser.click("#fold-runs").await;
    browser.click("#fold-agents").await;
    browser
        .wait_for(
            "both panels back",
            "document.getElementById('runs-list').offsetParent !== null && document.getElementById('tree').offsetParent !== null",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_shows_its_code_and_reason_in_its_head() {
    // The writer's script ends after one write: its second model call has nothing to answer.
    let script = json!({"schemaVersion": 1, "agents": {"default-writer": [
        {"toolCalls": [{"id": "c1", "name": "workspace_write_file",
            "arguments": {"path": "output/main.md", "content": "The lamp burned.\n"}}]}
    ]}})
    .to_string();
    let server = server(&script, CommitBridgeChoice::Transcript, None).await;
    let (browser, run_id) = Browser::start_run("failed_run", &server.url, "default-writer").await;
    let ended = server.runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(ended.status.as_str(), "failed");
    let failed = last_event(&server, &run_id).await;
    assert_eq!(failed.event_type, "run_failed");
    let code = failed.payload["code"].as_str().unwrap().to_owned();
    let message = failed.payload["message"].as_str().unwrap().to_owned();
    assert!(!code.is_empty() && !message.is_empty());
    browser
        .wait_for(
            "the failure's code and message in the run's head",
            &format!(
                "(() => {{ const f = document.querySelector('#run-head #run-failure'); \
                 return !!f && f.querySelector('code').textContent === {code:?} && f.textContent.includes({message:?}); }})()"
            ),
        )
        .await;
    browser.screenshot("01-failed-head").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_show_in_the_conversation_with_who_decided_and_what_ran() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let server = approval_server(seen).await;
    let (browser, _) =
        Browser::start_run("approval_conversation", &server.url, "careful-writer").await;
    browser.click("#tabs button[data-tab=approvals]").await;
    browser
        .wait_for(
            "the first write waiting",
            "!!document.querySelector('.approval .approval-arguments')",
        )
        .await;
    // The first write runs with edited arguments; the second is denied with a message.
    browser
        .eval(
            "(() => { const box = document.querySelector('.approval .approval-arguments'); \
             const args = JSON.parse(box.value); args.content = '# Scene\\n\\nThe lamp glowed.\\n'; \
             box.value = JSON.stringify(args); })()",
        )
        .await;
    browser.click(".approval button.edit").await;
    browser
        .wait_for(
            "the second write waiting",
            "[...document.querySelectorAll('.approval-diff .add')].some((l) => l.textContent === '+ The lamp stayed dark.')",
        )
        .await;
    browser
        .eval("document.querySelector('.approval .deny-message').value = 'Keep it glowing.'")
        .await;
    browser.click(".approval button.deny").await;
    browser.wait_for_status("completed").await;
    browser.click(".agent-row[data-kind=root]").await;
    browser.click("#tabs button[data-tab=conversation]").await;
    browser
        .wait_for(
            "both approvals in the conversation",
            "document.querySelectorAll('.conv-call .conv-approval[data-decision]').length === 2",
        )
        .await;
    let notes = browser
        .eval(
            "[...document.querySelectorAll('.conv-call .conv-approval')].map((n) => ({ \
             decision: n.dataset.decision, by: n.dataset.decidedBy, text: n.textContent, \
             ran: n.querySelector('.ran-arguments') && n.querySelector('.ran-arguments').textContent, \
             call: n.closest('.conv-call').querySelector('.conv-head').textContent }))",
        )
        .await;
    let notes = notes.as_array().unwrap();
    assert_eq!(notes[0]["decision"], "approve_with_arguments", "{notes:?}");
    assert_eq!(notes[0]["by"], "inspector");
    let ran = notes[0]["ran"].as_str().unwrap();
    assert!(ran.contains("The lamp glowed."), "what ran: {ran}");
    assert!(
        notes[0]["call"]
            .as_str()
            .unwrap()
            .contains("as the model wrote it")
    );
    assert!(
        notes[0]["text"]
            .as_str()
            .unwrap()
            .contains("Approval asked")
    );
    assert_eq!(notes[1]["decision"], "deny");
    assert!(
        notes[1]["text"]
            .as_str()
            .unwrap()
            .contains("Keep it glowing.")
    );
    assert_eq!(notes[1]["ran"], Value::Null);
    browser.screenshot("01-approvals-in-conversation").await;
    let text = server
        .runtime
        .read_workspace_file(&browser.open_run_id().await, "output/main.md")
        .await
        .unwrap()
        .text;
    assert_eq!(
        text, "# Scene\n\nThe lamp glowed.\n",
        "the edited arguments ran"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_agent_s_open_calls_are_drawn_ended() {
    let server = writers_room_server().await;
    let (browser, run_id) = Browser::start_run("cancelled_bars", &server.url, "writer").await;
    // Both reviewers are in their first (4 s) model call when the run is cancelled.
    browser
        .wait_for(
            "both reviewers at work",
            "document.querySelectorAll('.agent-row[data-kind=delegated][data-status=running]').length === 2",
        )
        .await;
    browser.click("#tabs button[data-tab=waterfall]").await;
    browser
        .wait_for(
            "both reviewers' model calls open",
            "window.ttInspector.waterfall().bars.filter((b) => b.agent !== 'inv_root' && b.kind === 'model' && b.end === null).length === 2",
        )
        .await;
    browser.click("#cancel-run").await;
    let cancelled = server.runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(cancelled.status.as_str(), "cancelled");
    browser.wait_for_status("cancelled").await;
    browser.eval("window.ttInspector.redraw()").await;
    let waterfall = browser.eval("window.ttInspector.waterfall()").await;
    let bars = waterfall["bars"].as_array().unwrap();
    let open: Vec<&Value> = bars.iter().filter(|b| b["end"].is_null()).collect();
    assert!(open.is_empty(), "bars still drawn running: {open:?}");
    let cut: Vec<&Value> = bars
        .iter()
        .filter(|b| b["agent"] != "inv_root" && b["kind"] == "model" && b["cut"] == json!(true))
        .collect();
    // (The writer may have been in a model call too: it is cut the same way, not counted here.)
    assert_eq!(cut.len(), 2, "the reviewers' calls end with them: {bars:?}");
    let t_end = waterfall["tEnd"].as_f64().unwrap();
    for bar in &cut {
        assert!(bar["end"].as_f64().unwrap() <= t_end);
        assert!(
            bar["label"]
                .as_str()
                .unwrap()
                .contains("stopped: cancelled"),
            "{bar}"
        );
    }
    browser.screenshot("01-cancelled-waterfall").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_s_waterfall_spans_its_own_run_with_the_fork_point_and_copied_work_apart() {
    let server = crate::support::server_with_provider(
        branching_writer(),
        CommitBridgeChoice::Transcript,
        None,
    )
    .await;
    let source = server.start("default-writer", "Write the scene.").await;
    server.runtime.wait_for_run(&source).await.unwrap();
    let events = journal(&server, &source).await;
    // Right after the first write's result.
    let at = events
        .iter()
        .find(|e| e.event_type == "tool_call_completed")
        .unwrap()
        .seq;
    let branched = server
        .post(
            &format!("/api/runs/{source}/fork"),
            &json!({"at": {"kind": "seq", "seq": at}, "changes": {"guidance": "Make it quieter."}}),
        )
        .await;
    assert_eq!(branched.status, 200, "{}", branched.body);
    let branch = branched.body["id"].as_str().unwrap().to_owned();
    // The fork point as the branch took it (it may move back to a point it can continue from).
    let at = branched.body["forkedFrom"]["seq"].as_u64().unwrap();
    server.runtime.wait_for_run(&branch).await.unwrap();
    let fork_event = journal(&server, &branch)
        .await
        .into_iter()
        .find(|e| e.event_type == "run_interrupted")
        .unwrap();
    let fork_time = serde_json::to_value(fork_event.timestamp).unwrap();

    let browser = Browser::launch("branch_waterfall").await;
    browser.open(&server.url).await;
    browser
        .wait_for(
            "the runs list",
            "document.querySelectorAll('.run-row').length === 2",
        )
        .await;
    browser
        .eval(&format!("window.ttInspector.openRun({branch:?})"))
        .await;
    browser
        .wait_for(
            "the branch completed",
            "document.getElementById('run-status').textContent === 'completed'",
        )
        .await;
    browser.click("#tabs button[data-tab=waterfall]").await;
    browser
        .wait_for(
            "the branch's waterfall",
            "!!window.ttInspector.waterfall().axis && window.ttInspector.waterfall().bars.length > 4",
        )
        .await;
    let waterfall = browser.eval("window.ttInspector.waterfall()").await;
    let axis = &waterfall["axis"];
    // The axis starts at the branch's own start, not at the copied events' old times.
    let zero_is_fork = browser
        .eval(&format!(
            "window.ttInspector.waterfall().axis.zero === Date.parse({fork_time})"
        ))
        .await;
    assert_eq!(zero_is_fork, json!(true), "{axis}");
    assert_eq!(axis["fork"]["seq"], json!(at));
    let fork_x = axis["fork"]["x"].as_f64().unwrap();
    // Round ticks: every tick a multiple of a 1-2-5 step.
    let step = axis["stepMs"].as_f64().unwrap();
    let mantissa = step / 10f64.powf(step.log10().floor());
    assert!(
        [1.0, 1.5, 2.0, 3.0, 5.0, 6.0, 9.0]
            .iter()
            .any(|m| (mantissa - m).abs() < 1e-9),
        "a round step: {step}"
    );
    for tick in axis["ticks"].as_array().unwrap() {
        let tick = tick.as_f64().unwrap();
        assert!(
            (tick / step).fract().abs() < 1e-9,
            "tick {tick} of step {step}"
        );
    }
    let bars = waterfall["bars"].as_array().unwrap();
    let copied: Vec<&Value> = bars
        .iter()
        .filter(|b| b["replayed"] == json!(true))
        .collect();
    let own: Vec<&Value> = bars
        .iter()
        .filter(|b| b["replayed"] == json!(false) && b["kind"] != "agent")
        .collect();
    assert!(
        copied.iter().any(|b| b["kind"] == "tool"),
        "the copied write is drawn: {bars:?}"
    );
    assert!(!own.is_empty(), "the branch's own work is drawn");
    for bar in &copied {
        assert!(
            bar["x1"].as_f64().unwrap() <= fork_x,
            "copied left of the fork: {bar}"
        );
    }
    for bar in &own {
        assert!(
            bar["x0"].as_f64().unwrap() >= fork_x,
            "own work right of the fork: {bar}"
        );
    }
    browser.screenshot("01-branch-waterfall").await;
    // Hovering one of the branch's own bars says what it is and when it ran.
    // A bar of the branch's own with nothing else of its lane (but the agent's band) under
    // its centre.
    let num = |b: &Value, key: &str| b[key].as_f64().unwrap();
    let bar = own
        .iter()
        .filter(|b| b["kind"] != "marker" && num(b, "x1") - num(b, "x0") >= 4.0)
        .find(|b| {
            !bars.iter().any(|o| {
                !std::ptr::eq(o, **b)
                    && o["kind"] != "agent"
                    && o["y"] == b["y"]
                    && num(o, "x0") - 3.0 <= num(b, "x")
                    && num(b, "x") <= num(o, "x1") + 3.0
            })
        })
        .expect("a bar alone under its centre");
    let origin = browser
        .eval("(() => { const r = document.getElementById('waterfall').getBoundingClientRect(); return [r.left, r.top]; })()")
        .await;
    browser
        .call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved",
                   "x": origin[0].as_f64().unwrap() + bar["x"].as_f64().unwrap(),
                   "y": origin[1].as_f64().unwrap() + bar["y"].as_f64().unwrap()}),
        )
        .await;
    let label = bar["label"].as_str().unwrap();
    browser
        .wait_for(
            "the hovered bar's details",
            &format!(
                "(() => {{ const t = document.getElementById('waterfall-tip'); \
                 return t.style.display === 'block' && t.textContent.includes({label:?}) && /at [0-9.]+ m?s for [0-9.]+ m?s/.test(t.textContent); }})()"
            ),
        )
        .await;
    browser.screenshot("02-hover").await;
    // The branch's note shows in the writer's conversation where it was read (after the
    // copied write's result, before the branch's first answer) and when.
    browser.click(".agent-row[data-kind=root]").await;
    browser.click("#tabs button[data-tab=conversation]").await;
    browser
        .wait_for(
            "the guidance where it was read",
            "(() => { const cards = [...document.querySelectorAll('.conv-list > .conv')]; \
             const at = cards.findIndex((c) => c.classList.contains('conv-guidance')); if (at < 1) return false; \
             const g = cards[at]; return g.textContent.includes('Make it quieter.') \
             && /[0-9]:[0-9]{2}/.test(g.querySelector('.conv-time').textContent) \
             && cards[at - 1].classList.contains('conv-tool') && cards[at - 1].textContent.includes('round 1') \
             && !!cards[at + 1] && cards[at + 1].classList.contains('conv-assistant'); })()",
        )
        .await;
    // The answer of round 1 was copied from the source; round 2 is the branch's own.
    let copied = browser
        .eval(
            "[...document.querySelectorAll('.conv-list > .conv-assistant')].map((c) => !!c.querySelector('.conv-copied'))",
        )
        .await;
    assert_eq!(copied, json!([true, false, false, false]), "answers copied");
    browser.screenshot("03-guidance-in-conversation").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_s_agents_are_labelled_by_task_filtered_and_folded() {
    const CHILDREN: u32 = 12;
    let server = server(
        &fanout_script(CHILDREN, 1),
        CommitBridgeChoice::Transcript,
        None,
    )
    .await;
    let mut root: Value =
        serde_json::from_str(include_str!("../../tt-bench/profiles/fanout-root.json")).unwrap();
    root["delegation"]["maxInvocationsPerRun"] = json!(CHILDREN);
    root["delegation"]["maxConcurrentInvocations"] = json!(CHILDREN);
    root["tools"]["maxCallsPerRun"] = json!(CHILDREN + 16);
    install_profiles(
        &server.runtime,
        &[
            &root.to_string(),
            include_str!("../../tt-bench/profiles/fanout-child.json"),
        ],
    )
    .await;
    let (browser, run_id) =
        Browser::start_run("fan_out_navigation", &server.url, "fanout-root").await;
    let finished = server.runtime.wait_for_run(&run_id).await.unwrap();
    assert_eq!(finished.status.as_str(), "completed");
    browser
        .wait_for(
            "every agent shown",
            &format!(
                "document.getElementById('run-status').textContent === 'completed' && \
                 window.ttInspector.agents().length === {}",
                CHILDREN + 1
            ),
        )
        .await;
    // Each delegated agent is labelled by its task (here the objective: no title was given)
    // and its id.
    browser
        .wait_for(
            "the task labels",
            "[...document.querySelectorAll('.agent-row[data-kind=delegated] .label')].some((l) => l.textContent === 'Investigate topic #3. · fanout-child')",
        )
        .await;
    // The filter: one match and the agent above it.
    browser
        .eval("(() => { const f = document.getElementById('agent-filter'); f.value = 'topic #7.'; f.dispatchEvent(new Event('input')); })()")
        .await;
    browser
        .wait_for(
            "the filtered tree",
            "(() => { const rows = [...document.querySelectorAll('.agent-row')]; return rows.length === 2 \
             && rows[0].dataset.kind === 'root' && rows[1].textContent.includes('Investigate topic #7.'); })()",
        )
        .await;
    browser.screenshot("01-filtered").await;
    browser
        .eval("(() => { const f = document.getElementById('agent-filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()")
        .await;
    // Folding the root hides its sub-tree in the tree and in the waterfall.
    browser.click(".agent-row[data-kind=root] .twisty").await;
    browser
        .wait_for(
            "the root folded",
            "document.querySelectorAll('.agent-row').length === 1",
        )
        .await;
    browser.click("#tabs button[data-tab=waterfall]").await;
    browser
        .wait_for(
            "one lane",
            "window.ttInspector.waterfall().lanes.length === 1",
        )
        .await;
    browser.screenshot("02-folded").await;
    // The time axis stays at the top while the lanes scroll under it.
    browser.resize(1024, 420).await;
    browser.click(".agent-row[data-kind=root] .twisty").await;
    browser
        .wait_for(
            "the root unfolded",
            &format!(
                "document.querySelectorAll('.agent-row').length === {} && window.ttInspector.waterfall().lanes.length === {}",
                CHILDREN + 1,
                CHILDREN + 1
            ),
        )
        .await;
    browser
        .eval("(() => { const b = document.getElementById('waterfall-box'); b.scrollTop = b.scrollHeight; return true; })()")
        .await;
    browser
        .wait_for(
            "the lanes scrolled under a sticky axis",
            "(() => { const b = document.getElementById('waterfall-box'), a = document.getElementById('waterfall-axis'); \
             return b.scrollTop > 40 && Math.abs(a.getBoundingClientRect().top - b.getBoundingClientRect().top) < 1; })()",
        )
        .await;
    browser.screenshot("03-sticky-axis").await;
    browser.resize(1400, 900).await;
    // The critical path: the root and, of the tasks it awaited, the one whose end came last,
    // by the inspector's rule: a task whose end is stamped from the wait's start to 1 ms past
    // its end, the latest by the journal's times, then by its order (times are in
    // milliseconds: ends stamped in the same one, or stamped in one order and appended in the
    // other, are common in a fast run). (The journal as the page received it over the stream.)
    let last_task = browser
        .eval(
            "(() => { const ev = window.ttInspector.run.events; \
             const at = (t) => Date.parse(ev.find((e) => e.type === t && e.payload.parentInvocationId === 'inv_root').timestamp); \
             const from = at('agent_await_started'), to = at('agent_await_completed'); \
             const done = ev.filter((e) => e.type === 'agent_task_completed' && e.payload.parentInvocationId === 'inv_root' \
               && Date.parse(e.timestamp) >= from && Date.parse(e.timestamp) <= to + 1); \
             done.sort((a, b) => (Date.parse(a.timestamp) - Date.parse(b.timestamp)) || (a.seq - b.seq)); \
             return done.length ? done[done.length - 1].payload.childInvocationId : null; })()",
        )
        .await
        .as_str()
        .map(str::to_owned);
    let mut want: Vec<String> = vec!["inv_root".to_owned()];
    want.extend(last_task);
    want.sort_unstable();
    let waterfall = browser.eval("window.ttInspector.waterfall()").await;
    let mut critical: Vec<String> = waterfall["bars"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["kind"] == "agent" && b["critical"] == json!(true))
        .map(|b| b["agent"].as_str().unwrap().to_owned())
        .collect();
    critical.sort_unstable();
    assert_eq!(critical, want, "the critical path");
    browser.screenshot("04-critical-path").await;
    // The event filter: only the events whose type or summary matches.
    browser.click("#tabs button[data-tab=timeline]").await;
    browser
        .eval("(() => { const f = document.getElementById('event-filter'); f.value = 'agent_task_registered'; f.dispatchEvent(new Event('input')); })()")
        .await;
    browser
        .wait_for(
            "only the tasks' registrations",
            &format!(
                "(() => {{ const rows = [...document.querySelectorAll('.ev-row')]; return rows.length === {CHILDREN} \
                 && rows.every((r) => r.textContent.includes('agent_task_registered')); }})()"
            ),
        )
        .await;
    browser.screenshot("05-events-filtered").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_elsewhere_is_listed_at_once_and_its_tokens_count_while_it_works() {
    let server = writers_room_server().await;
    let browser = Browser::launch("live_runs_list").await;
    browser.open_start_form(&server.url).await;
    // Started over the API, not from the page: the runs list learns of it from
    // `GET /api/run-updates`; the reviewers' first answers take 4 s, so it is still working
    // when its tokens must show.
    let run_id = server.start("writer", "Write the scene.").await;
    browser
        .wait_for(
            "the run listed while it works, with its tokens so far",
            &format!(
                "(() => {{ const r = document.querySelector('.run-row[data-run-id={run_id}]'); \
                 return !!r && !['completed', 'failed', 'cancelled'].includes(r.dataset.status) && Number(r.dataset.tokens) > 0; }})()"
            ),
        )
        .await;
    browser.screenshot("01-live-tokens").await;
    server.runtime.wait_for_run(&run_id).await.unwrap();
    let usage = server.get(&format!("/api/runs/{run_id}/usage")).await.body;
    let total = usage["inputTokens"].as_u64().unwrap() + usage["outputTokens"].as_u64().unwrap();
    browser
        .wait_for(
            "the run's final tokens",
            &format!(
                "document.querySelector('.run-row[data-run-id={run_id}]').dataset.tokens === '{total}'"
            ),
        )
        .await;
}
