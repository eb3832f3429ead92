//! A headless Chromium for the console's tests. Without `chromedriver`
//! and `chromium` a browser test is skipped with a note, unless
//! `REQUIRE_CHECKERS` is set (CI), where that fails.
//!
//! Each test owns a driver process on a free port and one browser session;
//! both end with the [`Browser`]. Tests are blocking like the rest of the
//! suite: [`Browser`] runs its own single-threaded runtime.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

use crate::support::app::TestApp;
use crate::support::checkers::tool;

/// The two sizes every page is seen at: a laptop and a phone.
pub const SIZES: [(u32, u32); 2] = [(1280, 800), (390, 844)];

pub struct Browser {
    runtime: tokio::runtime::Runtime,
    client: Option<Client>,
    driver: Child,
    /// The server's base URL (`http://127.0.0.1:PORT`).
    pub base: String,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `target/console-screenshots/`, beside the test binary's target dir.
pub fn screenshot_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/api-… → target
    let target = exe
        .ancestors()
        .nth(3)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target"));
    let dir = target.join("console-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

impl Browser {
    /// A browser for `app`, or `None` (skipped) when none is installed.
    pub fn open(app: &TestApp) -> Option<Browser> {
        if !tool("chromedriver") || !tool("chromium") {
            eprintln!("skipped: chromium and chromedriver are not installed");
            return None;
        }
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let caps = json!({
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                // As root Chromium needs --no-sandbox; /dev/shm is small in containers.
                "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                         "--disable-gpu", "--window-size=1280,800", "--lang=es-CO"]
            }
        });
        let Value::Object(caps) = caps else {
            panic!("capabilities are an object")
        };
        let url = format!("http://127.0.0.1:{port}");
        let client = runtime.block_on(async {
            let deadline = Instant::now() + Duration::from_secs(30);
            loop {
                match ClientBuilder::native()
                    .capabilities(caps.clone())
                    .connect(&url)
                    .await
                {
                    Ok(c) => break c,
                    Err(e) if Instant::now() < deadline => {
                        let _ = e;
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    Err(e) => panic!("chromedriver did not start a session: {e}"),
                }
            }
        });
        Some(Browser {
            runtime,
            client: Some(client),
            driver,
            base: app.url.clone(),
        })
    }

    fn client(&self) -> &Client {
        self.client.as_ref().expect("open browser")
    }

    pub fn block<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(f)
    }

    pub fn goto(&self, path: &str) {
        let url = format!("{}{path}", self.base);
        self.block(self.client().goto(&url)).expect("navigate");
    }

    pub fn path(&self) -> String {
        let url = self
            .block(self.client().current_url())
            .expect("current url");
        url.path().to_string()
    }

    pub fn source(&self) -> String {
        self.block(self.client().source()).expect("page source")
    }

    /// The text of the first element matching `css`, if any.
    pub fn text(&self, css: &str) -> Option<String> {
        self.retrying(|c| async move { c.find(Locator::Css(css)).await?.text().await })
            .ok()
    }

    /// Runs `act` on the page, again for a few seconds while it fails: the live view swaps
    /// `main` when an event arrives, so an element found a moment ago can be gone or stale.
    fn retrying<'a, T, F>(
        &'a self,
        act: impl Fn(&'a Client) -> F,
    ) -> Result<T, fantoccini::error::CmdError>
    where
        F: std::future::Future<Output = Result<T, fantoccini::error::CmdError>>,
    {
        let deadline = Instant::now() + Duration::from_secs(3);
        loop {
            match self.block(act(self.client())) {
                Ok(v) => return Ok(v),
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }

    pub fn fill(&self, css: &str, value: &str) {
        self.retrying(|c| async move {
            let el = c.find(Locator::Css(css)).await?;
            el.clear().await?;
            el.send_keys(value).await
        })
        .unwrap_or_else(|e| panic!("fill {css}: {e}"));
    }

    pub fn click(&self, css: &str) {
        self.retrying(|c| async move { c.find(Locator::Css(css)).await?.click().await })
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Runs `script` in the page and answers what it returns.
    pub fn js(&self, script: &str) -> Value {
        self.block(self.client().execute(script, Vec::new()))
            .unwrap_or_else(|e| panic!("script failed: {e}"))
    }

    /// Answers a `window.confirm` the page raised (the actions' confirmations).
    pub fn accept_alert(&self) {
        self.block(self.client().accept_alert())
            .expect("a confirm to accept");
    }

    /// Waits until `check` holds, or fails naming `what`.
    pub fn wait_until(&self, within: Duration, what: &str, check: impl Fn(&Browser) -> bool) {
        let deadline = Instant::now() + within;
        while !check(self) {
            assert!(Instant::now() < deadline, "waited {within:?} for {what}");
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Signs in through the form with `credential` (a key or the admin token).
    pub fn sign_in(&self, credential: &str) {
        self.goto("/console/entrar");
        self.fill("#credencial", credential);
        self.click("form button[type=submit]");
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.path() != "/console" {
            assert!(
                Instant::now() < deadline,
                "not signed in: at {} showing {}",
                self.path(),
                self.source()
            );
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    pub fn set_size(&self, (width, height): (u32, u32)) {
        self.block(self.client().set_window_size(width, height))
            .expect("window size");
        // The viewport is the window in headless mode; checked, not assumed.
        let inner = self.js("return window.innerWidth;").as_u64().unwrap_or(0);
        assert_eq!(inner, u64::from(width), "viewport width");
    }

    /// At both sizes: no horizontal scroll, and a screenshot
    /// `<name>-<w>x<h>.png`. Leaves the window at the laptop size.
    pub fn check_page(&self, name: &str) {
        for size in SIZES {
            self.set_size(size);
            let overflow = self.js(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth;",
            );
            assert!(
                overflow.as_i64().unwrap_or(1) <= 0,
                "{name} scrolls sideways at {size:?} by {overflow} px"
            );
            let png = self.block(self.client().screenshot()).expect("screenshot");
            let file = screenshot_dir().join(format!("{name}-{}x{}.png", size.0, size.1));
            std::fs::write(&file, png).expect("write screenshot");
        }
        self.set_size(SIZES[0]);
    }

    /// The session cookie's value, to use the session from a plain client.
    pub fn session_cookie(&self) -> Option<String> {
        let cookies = self.block(self.client().get_all_cookies()).ok()?;
        cookies
            .into_iter()
            .find(|c| c.name() == "emisor_sesion")
            .map(|c| c.value().to_string())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = self.runtime.block_on(client.close());
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A plain HTTP client that does not follow redirects (to see them).
pub fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// The value of cookie `name` among a response's `Set-Cookie` headers.
pub fn set_cookie(res: &reqwest::blocking::Response, name: &str) -> Option<String> {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| {
            v.strip_prefix(&format!("{name}="))
                .map(|rest| rest.split(';').next().unwrap_or("").to_string())
        })
}

/// The hidden `csrf` field of a page.
pub fn csrf_of(html: &str) -> Option<String> {
    let at = html.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    html.get(at..)?.split('"').next().map(str::to_string)
}

/// Signs in over plain HTTP through the form; answers the session cookie
/// (`emisor_sesion=…`, ready for a `Cookie` header) or the refusal's status.
pub fn http_sign_in(app: &TestApp, credential: &str) -> Result<String, u16> {
    let client = http();
    let form = client
        .get(format!("{}/console/entrar", app.url))
        .send()
        .expect("sign-in form");
    let pre = set_cookie(&form, "emisor_entrada").expect("form cookie");
    let token = csrf_of(&form.text().expect("form page")).expect("csrf field");
    let res = client
        .post(format!("{}/console/entrar", app.url))
        .header("Cookie", format!("emisor_entrada={pre}"))
        .form(&[("csrf", token.as_str()), ("credencial", credential)])
        .send()
        .expect("sign in");
    match set_cookie(&res, "emisor_sesion") {
        Some(id) if res.status().as_u16() == 303 && !id.is_empty() => {
            Ok(format!("emisor_sesion={id}"))
        }
        _ => Err(res.status().as_u16()),
    }
}

/// A console page with a session cookie: status and body.
pub fn page(app: &TestApp, cookie: &str, path: &str) -> (u16, String) {
    let res = http()
        .get(format!("{}{path}", app.url))
        .header("Cookie", cookie)
        .send()
        .expect("console page");
    (res.status().as_u16(), res.text().unwrap_or_default())
}
