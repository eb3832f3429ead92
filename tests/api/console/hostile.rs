//! Every console route, with odd paths, queries and forms, signed in or
//! not: never a 5xx. The routes are read from the console's source, so a
//! page added later is probed too.

use std::path::Path;

use super::harness::*;
use crate::support::app::*;

/// `(method, path)` of every `.route("…", web::get()/post()…)` under
/// `src/console`, with the scope's `/console` in front.
fn routes() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut stack = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("src/console")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            // Whitespace-tolerant: rustfmt may break a call over lines.
            for piece in text.split(".route(").skip(1) {
                let Some(quoted) = piece.trim_start().strip_prefix('"') else {
                    continue;
                };
                let Some((route, rest)) = quoted.split_once('"') else {
                    continue;
                };
                let rest = rest.trim_start().trim_start_matches(',').trim_start();
                let method = if rest.starts_with("web::post()") {
                    "POST"
                } else {
                    "GET"
                };
                found.push((method.to_string(), format!("/console{route}")));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Each `{name}` of a route filled with `value`.
fn fill(route: &str, value: &str) -> String {
    let mut out = String::new();
    let mut rest = route;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find('}')
            .map_or(rest.len(), |e| start + e + 1);
        out.push_str(value);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

const SEGMENTS: [&str; 7] = [
    "1",
    "0",
    "-1",
    "18446744073709551616",
    "abc",
    "%00",
    "%E2%82%AC",
];
const QUERIES: [&str; 7] = [
    "",
    "?empresa=1&page=999999999&limit=100000",
    "?empresa=-1",
    "?page=0&limit=0&desde=2026-13-45&hasta=x&estado=99&familia=zzz",
    "?q=%00%01%02&busqueda=%27%22%3Cscript%3E",
    "?empresa=1&empresa=2",
    "?x=",
];

#[test]
fn no_console_route_answers_a_5xx_to_odd_input_with_or_without_a_session() {
    let app = TestApp::spawn();
    let routes = routes();
    assert!(
        routes
            .iter()
            .any(|(m, r)| m == "POST" && r == "/console/empresas/{id}/llaves"),
        "routes split over lines are found too: {routes:?}"
    );
    let key = http_sign_in(&app, &app.sk_test()).unwrap();
    let admin = http_sign_in(&app, &app.admin_token()).unwrap();
    let long = "9".repeat(5000);
    let client = http();
    let mut probes = 0;
    for cookie in [None, Some(key.as_str()), Some(admin.as_str())] {
        let token = cookie
            .map(|c| csrf_of(&page(&app, c, "/console").1).unwrap())
            .unwrap_or_default();
        for (method, route) in &routes {
            // Signing out would end the session the next probes use.
            if route == "/console/salir" {
                continue;
            }
            for segment in SEGMENTS.iter().copied().chain([long.as_str()]) {
                for query in QUERIES {
                    let url = format!("{}{}{query}", app.url, fill(route, segment));
                    let mut req = if method == "POST" {
                        client.post(&url).form(&[
                            ("csrf", token.as_str()),
                            ("ambiente", segment),
                            ("nombre", segment),
                            ("id", segment),
                        ])
                    } else {
                        client.get(&url)
                    };
                    if let Some(c) = cookie {
                        req = req.header("Cookie", c);
                    }
                    let status = req.send().expect("request").status().as_u16();
                    probes += 1;
                    assert!(status < 500, "{method} {url} answered {status}");
                }
            }
        }
    }
    // Bodies that are not forms at all.
    for body in [&b"\xff\xfe\x00"[..], b"csrf=%ZZ", b"a=1&a=2&csrf"] {
        let status = client
            .post(format!("{}/console/ambiente", app.url))
            .header("Cookie", &admin)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body.to_vec())
            .send()
            .expect("request")
            .status()
            .as_u16();
        assert!((400..500).contains(&status), "{status}");
    }
    assert!(probes > 300, "{probes}");
    assert_eq!(
        page(&app, &admin, "/console").0,
        200,
        "still signed in, still serving"
    );
}
