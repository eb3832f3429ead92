-- wrk script: POST /v1/api/facturacion with a 5-line invoice, a unique
-- referencia_externa per request (identical payloads within 5 minutes are
-- refused as duplicates by design). TRANSMIT=true|false chooses the path.
--   KEY=sk_test_... TRANSMIT=false wrk -t2 -c8 -d20s --latency \
--     -s benches/load/facturacion.lua http://127.0.0.1:8080/v1/api/facturacion

local transmit = os.getenv("TRANSMIT") or "false"
local key = os.getenv("KEY") or ""
local counter = 0
local thread_id = 0
local threads = {}

-- wrk prints "Non-2xx or 3xx responses: N" when any request was refused.
function setup(thread)
  thread:set("id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  thread_id = tonumber(id) or 0
end

local function line(n, price)
  return string.format([[{"description":"Producto %d","invoiced_quantity":%d,"price_amount":%d,"unit_measure":{"code":"94"},"tax_totals":[{"tax_code":"01","tax_name":"IVA","percent":19}]}]], n, n, price)
end

local lines = table.concat({ line(1, 1000), line(2, 2500), line(3, 1200), line(4, 990), line(5, 15000) }, ",")

function request()
  counter = counter + 1
  local body = string.format([[{"id_tipo_documento":1,"transmit":%s,"referencia_externa":"load-%d-%d-%d","customer":{"identification_number":"900123456","name":"Cliente Carga S.A.S.","email":"carga@example.com","type_document_identification":{"code":"31"},"type_organization":{"code":"1"},"address":"Calle 1 # 2-3","municipality":{"code":"11001","name":"Bogotá"}},"invoice_lines":[%s]}]],
    transmit, os.time(), thread_id, counter, lines)
  return wrk.format("POST", nil, { ["Content-Type"] = "application/json", ["X-Api-Key"] = key }, body)
end
