//! Every query of the shipped Grafana dashboard and every alert rule, evaluated by a
//! real Prometheus that scrapes a live coordinator and worker on loopback.
//!
//! A dashboard query that returns nothing almost always means a misspelt metric
//! name, so dashboard queries must return data; alert expressions must evaluate
//! without error (most of them are rightly empty on a healthy cluster).
//!
//! Needs `prometheus` and `promtool` (Debian package `prometheus`); skipped with a
//! note when missing unless STERA_REQUIRE_PROMETHEUS=1.

use crate::common;
use crate::web;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{Answer, Coord, LONG, fake_worker, free_port, start_worker};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the coordinator crate sits in the workspace")
        .to_path_buf()
}

/// `program` on PATH (or in the usual Debian place), if installed.
fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin")])
        .map(|d| d.join(program))
        .find(|p| p.is_file())
}

/// The Prometheus programs, or `None` (test skipped) when they are missing and not
/// required.
fn prometheus_programs() -> Option<(PathBuf, PathBuf)> {
    match (find_program("prometheus"), find_program("promtool")) {
        (Some(p), Some(t)) => Some((p, t)),
        _ => {
            assert!(
                std::env::var("STERA_REQUIRE_PROMETHEUS").as_deref() != Ok("1"),
                "STERA_REQUIRE_PROMETHEUS=1 but prometheus/promtool are not installed \
                 (apt-get install prometheus)"
            );
            eprintln!(
                "note: prometheus not installed; skipping (set STERA_REQUIRE_PROMETHEUS=1 to fail)"
            );
            None
        }
    }
}

/// A child process killed when the test ends, however it ends.
struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Percent-encodes a query string value.
fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Grafana's built-in interval variables, as Grafana would expand them for a
/// Prometheus scraping every second.
fn expand_grafana_variables(expr: &str) -> String {
    expr.replace("$__rate_interval", "30s")
        .replace("$__interval", "5s")
        .replace("$__range", "1h")
}

/// Every `expr` of every target of every panel (rows included).
fn dashboard_exprs(dashboard: &serde_json::Value) -> Vec<(String, String)> {
    fn walk(panels: &serde_json::Value, out: &mut Vec<(String, String)>) {
        for p in panels.as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("?").to_owned();
            for t in p["targets"].as_array().into_iter().flatten() {
                if let Some(e) = t["expr"].as_str() {
                    out.push((title.clone(), e.to_owned()));
                }
            }
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// Every `expr:` of a rules file: plain, quoted, or a `|`/`>` block.
fn alert_exprs(yaml: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        i += 1;
        let Some(value) = trimmed.strip_prefix("expr:") else {
            continue;
        };
        let value = value.trim();
        if value.starts_with('|') || value.starts_with('>') {
            let indent = line.len() - trimmed.len();
            let mut block = Vec::new();
            while i < lines.len() {
                let l = lines[i];
                let inner = l.len() - l.trim_start().len();
                if !l.trim().is_empty() && inner <= indent {
                    break;
                }
                block.push(l.trim());
                i += 1;
            }
            out.push(block.join(" ").trim().to_owned());
        } else {
            let unquoted = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            out.push(unquoted.to_owned());
        }
    }
    out
}

/// Runs an instant query; returns the API's JSON answer.
fn query(prometheus: &str, expr: &str) -> serde_json::Value {
    let r = web::get(prometheus, &format!("/api/v1/query?query={}", encode(expr)))
        .unwrap_or_else(|e| panic!("query `{expr}` failed: {e}"));
    serde_json::from_str(&r.body)
        .unwrap_or_else(|e| panic!("query `{expr}`: not JSON ({e}): {}", r.body))
}

fn result_count(answer: &serde_json::Value) -> usize {
    match &answer["data"]["result"] {
        serde_json::Value::Array(a) => a.len(),
        // Scalar results (e.g. `time()`) are a single [time, value] pair.
        serde_json::Value::Null => 0,
        _ => 1,
    }
}

fn wait_query(prometheus: &str, expr: &str, what: &str, ok: impl Fn(&serde_json::Value) -> bool) {
    let start = Instant::now();
    loop {
        let a = query(prometheus, expr);
        if a["status"] == "success" && ok(&a) {
            return;
        }
        assert!(start.elapsed() < LONG, "{what}: `{expr}` gave {a}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn alert_rules_pass_promtool() {
    let Some((_, promtool)) = prometheus_programs() else {
        return;
    };
    let rules = repo_root().join("deploy/prometheus/alerts.yml");
    let out = Command::new(promtool)
        .arg("check")
        .arg("rules")
        .arg(&rules)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn alert_expr_reader_handles_every_style() {
    let yaml = "groups:\n  - rules:\n      - alert: A\n        expr: up == 0\n      - alert: B\n        expr: \"x > 1\"\n      - alert: C\n        expr: |\n          sum(rate(a[5m]))\n            > 2\n        for: 5m\n";
    assert_eq!(
        alert_exprs(yaml),
        vec!["up == 0", "x > 1", "sum(rate(a[5m])) > 2"]
    );
}

#[test]
fn every_dashboard_and_alert_query_works_on_live_metrics() {
    let Some((prometheus_bin, _)) = prometheus_programs() else {
        return;
    };
    let root = repo_root();
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("deploy/grafana/stera-dashboard.json")).unwrap(),
    )
    .expect("the Grafana dashboard is JSON");
    let panels = dashboard_exprs(&dashboard);
    assert!(
        panels.len() >= 20,
        "only {} dashboard queries",
        panels.len()
    );
    let alerts_yml = std::fs::read_to_string(root.join("deploy/prometheus/alerts.yml")).unwrap();
    let alerts = alert_exprs(&alerts_yml);
    assert_eq!(alerts.len(), alerts_yml.matches("- alert:").count());

    // A coordinator with a real worker (so numbers move), both exposing metrics;
    // periodic exports and backups on as shipped, so the panels' alert thresholds
    // have data (the first ones are hours away).
    let dir = tempfile::tempdir().unwrap();
    let coordinator_http = format!("127.0.0.1:{}", free_port());
    let worker_http = format!("127.0.0.1:{}", free_port());
    let c = Coord::start(
        &dir.path().join("book.db"),
        "127.0.0.1:0",
        &[
            "--metrics",
            &coordinator_http,
            "--nodes",
            "300",
            // A real worker and a fake one that answers out of range.
            "--allow-mixed-engines",
            "--export-dir",
            dir.path().to_str().unwrap(),
            "--export",
            dir.path().join("book.db2016").to_str().unwrap(),
            "--export-every-mins",
            "60",
            "--backup-dir",
            dir.path().join("backups").to_str().unwrap(),
            "--backup-every-mins",
            "360",
        ],
        &[],
    );
    let _worker = KillOnDrop(start_worker(
        &c.url(),
        &["--slots", "1", "--metrics", &worker_http],
        &[],
    ));
    // A second coordinator that plays learning games (then thinks, so that it
    // keeps serving), so that the learning panels have data too.
    let learner_db = dir.path().join("learner.db");
    common::synthetic_store(&learner_db, 300, 100);
    let learner_http = format!("127.0.0.1:{}", free_port());
    let _learner = Coord::start(
        &learner_db,
        "127.0.0.1:0",
        &[
            "--metrics",
            &learner_http,
            "--think-limit",
            "1000000",
            "--nodes",
            "300",
            "--local-workers",
            "1",
            "--learn-games",
            "4",
            "--learn-nodes",
            "60",
            "--learn-opponent",
            "--nodes 60",
            "--ply-limit",
            "40",
        ],
        &[],
    );
    web::wait_status(&learner_http, LONG, "learning games recorded", |s| {
        s["learning_opponents"]
            .as_array()
            .is_some_and(|o| !o.is_empty())
    });
    // A rejected result and an export, so those series have data too.
    let rt = common::runtime(1);
    rt.block_on(fake_worker(c.url(), None, 1, Answer::OutOfRange, 1, LONG))
        .unwrap();
    web::wait_status(&coordinator_http, LONG, "a few positions", |s| {
        s["nodes"].as_u64().unwrap_or(0) >= 3
    });
    rt.block_on(async {
        let mut client = common::client(c.url(), None).await.unwrap();
        client
            .export(stera_proto::v1::ExportRequest {
                path: dir.path().join("book.db.txt").display().to_string(),
                shrink: false,
                raw: false,
                ..Default::default()
            })
            .await
            .unwrap();
    });

    // Prometheus scraping both every second, with the shipped alert rules.
    std::fs::copy(
        root.join("deploy/prometheus/alerts.yml"),
        dir.path().join("alerts.yml"),
    )
    .unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - alerts.yml\n\
         scrape_configs:\n  - job_name: stera-coordinator\n    static_configs:\n      - targets: ['{coordinator_http}', '{learner_http}']\n\
         \x20 - job_name: stera-worker\n    static_configs:\n      - targets: ['{worker_http}']\n"
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    let prometheus = format!("127.0.0.1:{}", free_port());
    let _server = KillOnDrop(
        Command::new(prometheus_bin)
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prometheus}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus"),
    );
    web::get_ok(&prometheus, "/-/ready", LONG);
    // Both targets up, and enough samples for rates over the expanded intervals.
    wait_query(&prometheus, "sum(up)", "every target up", |a| {
        a["data"]["result"][0]["value"][1] == "3"
    });
    wait_query(
        &prometheus,
        "count_over_time(stera_worker_evaluations_total[30s]) >= 8",
        "eight worker scrapes",
        |a| result_count(a) == 1,
    );
    wait_query(
        &prometheus,
        "count_over_time(stera_coordinator_learning_opponent_games_total[30s]) >= 2",
        "two scrapes of the learning games",
        |a| result_count(a) >= 1,
    );
    wait_query(
        &prometheus,
        "increase(stera_coordinator_thought_positions_total[30s]) > 0",
        "positions being added",
        |a| result_count(a) >= 1,
    );

    let mut failures = Vec::new();
    for (title, expr) in &panels {
        let expr = expand_grafana_variables(expr);
        let a = query(&prometheus, &expr);
        if a["status"] != "success" {
            failures.push(format!("panel `{title}`: `{expr}` failed: {a}"));
        } else if result_count(&a) == 0 {
            failures.push(format!("panel `{title}`: `{expr}` returned nothing"));
        }
    }
    for expr in &alerts {
        let a = query(&prometheus, expr);
        if a["status"] != "success" {
            failures.push(format!("alert `{expr}` failed: {a}"));
        }
    }
    // The rule manager evaluates the same rules itself: none may be unhealthy.
    let start = Instant::now();
    let rules = loop {
        let r = web::get_ok(&prometheus, "/api/v1/rules", LONG);
        let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        let rules: Vec<serde_json::Value> = v["data"]["groups"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
            .collect();
        if rules.iter().all(|r| r["health"] != "unknown") || start.elapsed() > LONG {
            break rules;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(rules.len(), alerts.len());
    for r in &rules {
        if r["health"] != "ok" {
            failures.push(format!("rule {} is unhealthy: {r}", r["name"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
