#![allow(clippy::unwrap_used, clippy::expect_used)]

use chrono::{NaiveDate, Utc};

use crate::*;

fn company() -> NewCompany {
    NewCompany {
        nit: "900000001".into(),
        dv: 9,
        name: "Demo S.A.S.".into(),
        trade_name: None,
        address: "Calle 1".into(),
        municipality_code: "11001".into(),
        municipality_name: "Bogotá".into(),
        department_code: "11".into(),
        department_name: "Bogotá D.C.".into(),
        email: None,
        phone: None,
        organization_type: 1,
        tax_regime: "48".into(),
        tax_responsibilities: "O-13".into(),
        rate_limit_per_minute: None,
        monthly_document_limit: None,
        demo: false,
    }
}

fn resolution(from: u64, to: u64) -> NewResolution {
    NewResolution {
        document_type: 1,
        resolution_number: "18760000001".into(),
        resolution_date: NaiveDate::from_ymd_opt(2019, 1, 19).unwrap(),
        prefix: "SETP".into(),
        from,
        to,
        valid_from: NaiveDate::from_ymd_opt(2019, 1, 19).unwrap(),
        valid_to: NaiveDate::from_ymd_opt(2030, 1, 19).unwrap(),
        technical_key: "fc8eac422eba16e22ffd8c6f94b3f40a6e38162c".into(),
    }
}

fn doc(id: u64, number: u64, r: &NumberingResolution) -> DocumentRecord {
    DocumentRecord {
        id,
        company_id: r.company_id,
        environment: Environment::Test,
        document_type: r.document_type,
        resolution_id: r.id,
        prefix: r.prefix.clone(),
        number,
        state: 1,
        code: None,
        external_reference: None,
        customer_id: None,
        request: serde_json::Value::Null,
        extra: serde_json::Value::Null,
        created_at: Utc::now(),
        updated_at: Utc::now(),
    }
}

#[test]
fn companies_keys_customers_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let (company_id, key_id) = {
        let s = SledStore::open(dir.path()).unwrap();
        assert!(s.is_empty().unwrap());
        let c = s.create_company(company()).unwrap();
        assert_eq!(c.id, 1);
        assert!(matches!(
            s.create_company(company()),
            Err(StoreError::Conflict(_))
        ));
        let k = s
            .insert_api_key(ApiKeyRecord {
                id: 0,
                company_id: c.id,
                environment: Environment::Test,
                hash: "ab".repeat(32),
                display_prefix: "sk_test_ab".into(),
                label: None,
                user_id: None,
                created_at: Utc::now(),
                revoked_at: None,
            })
            .unwrap();
        let input = CustomerInput {
            identification_number: "123".into(),
            name: "Ana".into(),
            email: "ana@example.com".into(),
            address: Some("Cra 7".into()),
            ..Default::default()
        };
        let first = s.upsert_customer(c.id, input.clone()).unwrap();
        let second = s
            .upsert_customer(
                c.id,
                CustomerInput {
                    name: "Ana María".into(),
                    address: None,
                    ..input
                },
            )
            .unwrap();
        assert_eq!(first.id, second.id, "upsert by identification number");
        assert_eq!(
            second.address.as_deref(),
            Some("Cra 7"),
            "omitted field kept"
        );
        (c.id, k.id)
    };
    let s = SledStore::open(dir.path()).unwrap();
    assert!(!s.is_empty().unwrap());
    assert_eq!(s.company(company_id).unwrap().unwrap().nit, "900000001");
    assert_eq!(
        s.api_key_by_hash(&"ab".repeat(32)).unwrap().unwrap().id,
        key_id
    );
    let page = s.customers(company_id, 1, 20, Some("maría")).unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.items[0].name, "Ana María");
    let revoked = s.revoke_api_key(key_id, Utc::now()).unwrap().unwrap();
    assert!(revoked.revoked_at.is_some());
}

#[test]
fn numbers_are_gapless_and_bounded_by_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStore::open(dir.path()).unwrap();
    let c = s.create_company(company()).unwrap();
    let r = s
        .add_resolution(c.id, resolution(990000000, 990000002))
        .unwrap();
    let today = NaiveDate::from_ymd_opt(2026, 11, 22).unwrap();
    assert_eq!(
        s.active_resolution(c.id, 1, today).unwrap().unwrap().id,
        r.id
    );
    let numbers: Vec<u64> = (0..3)
        .map(|_| {
            s.create_document(&r, &|id, n| doc(id, n, &r))
                .unwrap()
                .number
        })
        .collect();
    assert_eq!(numbers, vec![990000000, 990000001, 990000002]);
    assert!(matches!(
        s.create_document(&r, &|id, n| doc(id, n, &r)),
        Err(StoreError::RangeExhausted { .. })
    ));
    assert!(
        s.active_resolution(c.id, 1, today).unwrap().is_none(),
        "exhausted"
    );
    assert_eq!(s.document_counts().unwrap(), vec![((1, 1), 3)]);
}

#[test]
fn concurrent_allocation_never_repeats_a_number() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStore::open(dir.path()).unwrap();
    let c = s.create_company(company()).unwrap();
    let r = s.add_resolution(c.id, resolution(1, 1000)).unwrap();
    let mut all: Vec<u64> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    (0..25)
                        .map(|_| {
                            s.create_document(&r, &|id, n| doc(id, n, &r))
                                .unwrap()
                                .number
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    all.sort_unstable();
    assert_eq!(all, (1..=100).collect::<Vec<_>>());
}

#[test]
fn second_open_of_the_same_dir_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _first = SledStore::open(dir.path()).unwrap();
    assert!(SledStore::open(dir.path()).is_err());
}
