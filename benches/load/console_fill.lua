-- wrk script: fills a store across the families the console shows, one
-- family after another per request, `transmit: false` (drafts: numbered,
-- built, signed and stored, nothing sent): a unified invoice, a support
-- document, a POS receipt (registers 1-4, cashiers 1-8) and a payroll.
-- KEYS is a comma-separated list of `sk_test_` keys, one company each;
-- each thread issues with one of them (thread n with key n mod #KEYS).
--   KEYS=sk_test_a,sk_test_b wrk -t4 -c16 -d20s -s benches/load/console_fill.lua http://127.0.0.1:8080

local keys = {}
for k in string.gmatch(os.getenv("KEYS") or "", "[^,]+") do
  table.insert(keys, k)
end
local counter = 0
local thread_id = 0
local threads = {}

function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  thread_id = tonumber(id) or 0
end

local customer = [=["customer":{"identification_number":"900123456","name":"Cliente Carga S.A.S.","email":"carga@example.com","type_document_identification":{"code":"31"},"type_organization":{"code":"1"},"address":"Calle 1 # 2-3","municipality":{"code":"11001","name":"Bogotá"}}]=]
local lines = [=["invoice_lines":[{"description":"Producto 1","invoiced_quantity":2,"price_amount":1000,"unit_measure":{"code":"94"},"tax_totals":[{"tax_code":"01","tax_name":"IVA","percent":19}]},{"description":"Producto 2","invoiced_quantity":1,"price_amount":15000,"unit_measure":{"code":"94"},"tax_totals":[{"tax_code":"01","tax_name":"IVA","percent":19}]}]]=]

local function invoice(tag)
  return "/v1/api/facturacion", string.format(
    [=[{"id_tipo_documento":1,"transmit":false,"referencia_externa":"fill-%s",%s,%s}]=], tag, customer, lines)
end

local function support(tag)
  return "/v1/api/documentos-soporte/emitir", string.format(
    [=[{"transmitir":false,"observaciones":"fill-%s","proveedor":{"numero_identificacion":"10203%05d","nombre":"Proveedor %d","tipo_documento":"13","correo":"p@example.test","direccion":"Carrera 7 # 45-10","municipio":"05001"},"lineas":[{"descripcion":"Servicio de aseo","cantidad":2,"precio_unitario":50000,"unidad_medida":"E48"}],"forma_pago":"1","metodo_pago":"47"}]=],
    tag, counter % 100000, counter % 50)
end

local function pos(tag)
  return "/v1/api/pos/emitir", string.format(
    [=[{"transmitir":false,"referencia_externa":"fill-%s","id_caja":"%d","id_cajero":"%d","lineas":[{"descripcion":"Café americano","cantidad":2,"precio_unitario":4500,"porcentaje_iva":8,"tipo_impuesto":"04"},{"descripcion":"Sándwich","cantidad":1,"precio_unitario":12000,"porcentaje_iva":19}],"propina_voluntaria":1000,"pagos":[{"metodo":"10","monto":15000},{"metodo":"48","monto":10000}]}]=],
    tag, counter % 4 + 1, counter % 8 + 1)
end

local function payroll(tag)
  return "/v1/api/nomina/enviar", string.format(
    [=[{"transmit":false,"empleado":{"numero_documento":"7%09d","primer_nombre":"Ana","primer_apellido":"Gómez","tipo_contrato":"2"},"periodo":{"fecha_ingreso":"2024-02-01","fecha_liquidacion_inicio":"2025-03-01","fecha_liquidacion_fin":"2025-03-31","tiempo_laborado_dias":30},"devengados":[{"seccion":"BASICO","dias_trabajados":30,"sueldo_trabajado":1423500}],"deducciones":[{"seccion":"SALUD","porcentaje":4,"base_calculo":1423500,"valor_total":56940}],"notas":["fill %s"]}]=],
    (thread_id * 10000000 + counter) % 1000000000, tag)
end

local families = { invoice, support, pos, payroll }

function request()
  counter = counter + 1
  local key = keys[(thread_id % #keys) + 1] or ""
  local tag = string.format("%d-%d-%d", os.time(), thread_id, counter)
  local path, body = families[(counter % #families) + 1](tag)
  return wrk.format("POST", path, { ["Content-Type"] = "application/json", ["X-Api-Key"] = key }, body)
end
