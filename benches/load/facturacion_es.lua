-- wrk script: POST /v1/api/facturacion-es/factura with the same 5-line
-- invoice as facturacion.lua, in the Spanish-named API's words (IVA
-- shortcut, a unique `referencia` per request). TRANSMIT=true|false.
--   KEY=sk_test_... TRANSMIT=false wrk -t2 -c8 -d20s --latency \
--     -s benches/load/facturacion_es.lua http://127.0.0.1:8080/v1/api/facturacion-es/factura

local transmit = os.getenv("TRANSMIT") or "false"
local key = os.getenv("KEY") or ""
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

local function line(n, price)
  return string.format([[{"descripcion":"Producto %d","cantidad":%d,"precio":%d,"unidad_medida":"94","iva":19}]], n, n, price)
end

local lines = table.concat({ line(1, 1000), line(2, 2500), line(3, 1200), line(4, 990), line(5, 15000) }, ",")

function request()
  counter = counter + 1
  local body = string.format([[{"transmitir":%s,"referencia":"load-%d-%d-%d","cliente":{"numero_identificacion":"900123456","nombre":"Cliente Carga S.A.S.","correo":"carga@example.com","tipo_documento":"31","tipo_organizacion":"1","direccion":"Calle 1 # 2-3","municipio":"11001"},"lineas":[%s]}]],
    transmit, os.time(), thread_id, counter, lines)
  return wrk.format("POST", nil, { ["Content-Type"] = "application/json", ["X-Api-Key"] = key }, body)
end
