//! The console's list of documents (`operator::documents::search`) over a
//! data dir the API filled: every family in one list, each filter, each
//! kind of search, and nothing of another environment.

use emisor::api::invoice_request::examples;
use emisor::operator::documents::{search, ConsoleQuery, RowsPage};
use emisor_store::{DocumentRecord, Environment, Family};
use serde_json::{json, Value};

use crate::support::app::*;
use crate::support::bodies::unique;
use crate::support::payroll::{employee_number, monthly};

fn issue(app: &TestApp, path: &str, body: Value) -> u64 {
    let (status, res) = json(app.post(path, &app.sk_test(), &unique(body)));
    assert_eq!(status, 200, "{res}");
    let data = &res["data"];
    data["documento"]["id"]
        .as_u64()
        .or_else(|| data["id"].as_u64())
        .unwrap_or_else(|| panic!("no id: {res}"))
}

fn ids(page: &RowsPage) -> Vec<u64> {
    page.items.iter().map(|r| r.id).collect()
}

#[test]
fn documents_the_api_issued_are_listed_together_filtered_and_found() {
    let mut app = TestApp::spawn();
    let invoice = issue(&app, "/v1/api/facturacion", examples::invoice());
    let support = issue(&app, "/v1/api/facturacion", examples::support_document());
    let pos = issue(&app, "/v1/api/facturacion", examples::pos());
    let mut draft_body = examples::invoice();
    draft_body["transmit"] = json!(false);
    let draft = issue(&app, "/v1/api/facturacion", draft_body);
    let employee = employee_number();
    let payroll = issue(&app, "/v1/api/nomina/enviar", monthly(&employee));
    app.stop();

    let store = open_stopped_store(&app.dir)
        .start_async()
        .expect("async store");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let doc = |id: u64| {
            let store = store.clone();
            async move { store.document(id).await.unwrap().unwrap() }
        };
        let inv: DocumentRecord = doc(invoice).await;
        let (company, env) = (inv.company_id, inv.environment);
        let find = |q: ConsoleQuery| {
            let store = store.clone();
            async move { search(&store, company, env, &q).await.expect("search") }
        };
        let all = ConsoleQuery {
            page: 1,
            limit: 20,
            ..Default::default()
        };

        // Every family in one list, newest first.
        let page = find(all.clone()).await;
        assert_eq!(ids(&page), [payroll, draft, pos, support, invoice]);
        assert_eq!((page.total, page.total_exact), (5, true));
        let row = &page.items[4];
        assert_eq!(row.document_type, 1);
        assert_eq!(row.number, inv.full_number());
        assert_eq!(row.customer_name.as_deref(), Some("Cliente Ejemplo S.A.S."));
        assert_eq!(row.customer_id.as_deref(), Some("800197268"));
        assert_eq!(row.state, 2);
        assert_eq!(row.code, inv.code);
        assert_eq!(row.issued_at.offset().local_minus_utc(), -5 * 3600);
        let nomina = &page.items[0];
        assert_eq!(nomina.family, Family::Payroll);
        assert_eq!(nomina.document_type, 11);
        assert_eq!(
            nomina.customer_name.as_deref(),
            Some("Ana María Gómez Ñandú")
        );
        assert_eq!(nomina.customer_id.as_deref(), Some(employee.as_str()));
        assert_eq!(page.items[3].customer_name.as_deref(), Some("Pedro Pérez"));

        // Filters.
        let q = |f: fn(&mut ConsoleQuery)| {
            let mut q = all.clone();
            f(&mut q);
            q
        };
        assert_eq!(ids(&find(q(|q| q.family = Some(Family::Pos))).await), [pos]);
        assert_eq!(ids(&find(q(|q| q.states = vec![1])).await), [draft]);
        let today = inv.issue_date;
        let mut dated = all.clone();
        dated.from = Some(today);
        dated.to = Some(today);
        assert_eq!(find(dated.clone()).await.total, 5);
        dated.from = today.succ_opt();
        dated.to = None;
        assert_eq!(find(dated).await.total, 0);
        let mut by_customer = all.clone();
        by_customer.customer = Some("800197268".into());
        assert_eq!(ids(&find(by_customer).await), [draft, invoice]);
        let mut by_number = all.clone();
        by_number.number = Some(inv.full_number());
        assert_eq!(ids(&find(by_number).await), [invoice]);

        // Searches: full and bare number, code, customer by number and
        // by a word of its name (case and accents aside), an employee.
        let sup = doc(support).await;
        for (text, want) in [
            (inv.full_number().to_lowercase(), vec![invoice]),
            (inv.code.clone().unwrap().to_uppercase(), vec![invoice]),
            ("1020304050".to_string(), vec![support]),
            ("PEREZ".to_string(), vec![support]),
            ("ejem cli".to_string(), vec![draft, invoice]),
            (employee.clone(), vec![payroll]),
            ("nadie".to_string(), vec![]),
        ] {
            let mut s = all.clone();
            s.text = Some(text.clone());
            assert_eq!(ids(&find(s).await), want, "{text}");
        }
        // A bare number: every family's document of that number.
        let mut bare = all.clone();
        bare.text = Some(sup.number.to_string());
        let found = find(bare).await;
        assert!(ids(&found).contains(&support), "{:?}", ids(&found));
        assert!(found
            .items
            .iter()
            .all(|r| r.number.ends_with(&sup.number.to_string())));

        // Nothing of the other environment.
        let other = match env {
            Environment::Test => Environment::Live,
            Environment::Live => Environment::Test,
        };
        let elsewhere = search(&store, company, other, &all).await.unwrap();
        assert_eq!(elsewhere.total, 0);
        let another = search(&store, company + 1000, env, &all).await.unwrap();
        assert_eq!(another.total, 0);
    });
}
