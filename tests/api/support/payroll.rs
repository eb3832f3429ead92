//! Payroll bodies.

use serde_json::{json, Value};

/// A distinct employee document number per call, so equal bodies are
/// distinct payrolls (the duplicate-payload window would refuse them).
pub fn employee_number() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!("10{}{n:04}", std::process::id() % 100_000)
}

/// A March payroll: salary, transport aid, 10 daytime overtime hours,
/// health and pension at 4 %.
pub fn monthly(document: &str) -> Value {
    json!({
        "id_empresa": 999, "ambiente": "1",
        "empleado": {
            "numero_documento": document, "primer_nombre": "Ana", "otros_nombres": "María",
            "primer_apellido": "Gómez", "segundo_apellido": "Ñandú", "tipo_contrato": "2",
            "codigo_trabajador": "E-7", "lugar_trabajo_direccion": "Calle 1 # 2-3"
        },
        "periodo": {
            "fecha_ingreso": "2024-02-01",
            "fecha_liquidacion_inicio": "2025-03-01", "fecha_liquidacion_fin": "2025-03-31",
            "tiempo_laborado_dias": 30
        },
        "devengados": [
            {"seccion": "BASICO", "dias_trabajados": 30, "sueldo_trabajado": 1423500},
            {"seccion": "TRANSPORTE", "auxilio_transporte": 200000},
            {"seccion": "HED", "cantidad": 10, "valor_total": 74140.63}
        ],
        "deducciones": [
            {"seccion": "SALUD", "porcentaje": 4, "base_calculo": 1423500, "valor_total": 56940},
            {"seccion": "FONDO_PENSION", "porcentaje": 4, "base_calculo": 1423500, "valor_total": 56940}
        ],
        "notas": ["Nómina de marzo"],
        "transmit": true
    })
}

/// A replacing adjustment (`tipo_nota` 1) of the payroll `cune` of
/// [`monthly`]`(document)`: the salary corrected to 1 500 000.
pub fn salary_replacement(cune: &str, document: &str) -> Value {
    json!({
        "cune_referencia": cune,
        "tipo_nota": 1,
        "empleado": monthly(document)["empleado"],
        "devengados": [
            {"seccion": "BASICO", "dias_trabajados": 30, "sueldo_trabajado": 1500000},
            {"seccion": "TRANSPORTE", "auxilio_transporte": 200000}
        ],
        "deducciones": [
            {"seccion": "SALUD", "porcentaje": 4, "valor_total": 60000},
            {"seccion": "FONDO_PENSION", "porcentaje": 4, "valor_total": 60000}
        ],
        "notas": ["Corrige el salario"]
    })
}
