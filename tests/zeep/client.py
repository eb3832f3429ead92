#!/usr/bin/env python3
"""A typed client of the authority simulator that nobody here wrote: zeep
builds it from the simulator's WSDL. It calls every operation the simulator
implements and checks every field of the typed answers; it exits non-zero on
the first mismatch.

Usage: client.py CASE.json -- the case (service URL, client key and
certificate, the issuer's ranges, signed ZIPs and what each should get) is
written by tests/api/zeep_client.rs.

Needs Debian's python3-zeep and python3-xmlsec.
"""

import base64
import datetime
import io
import json
import sys
import time
import uuid
import zipfile

import xmlsec
import zeep
from lxml import etree

SOAP12 = "http://www.w3.org/2003/05/soap-envelope"
WSA = "http://www.w3.org/2005/08/addressing"
WSSE = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
WSU = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
BASE64 = ("http://docs.oasis-open.org/wss/2004/01/"
          "oasis-200401-wss-soap-message-security-1.0#Base64Binary")
X509V3 = ("http://docs.oasis-open.org/wss/2004/01/"
          "oasis-200401-wss-x509-token-profile-1.0#X509v3")
DIAN_RESPONSE = "http://schemas.datacontract.org/2004/07/DianResponse"
UBL_AR = "urn:oasis:names:specification:ubl:schema:xsd:ApplicationResponse-2"
CBC = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2"

DESC_OK = "Procesado Correctamente."
DESC_ERRORS = "Validación contiene errores en campos mandatorios."
DESC_PENDING = "Batch en proceso de validación."
DUPLICATE = "Regla: 90, Rechazo: Documento procesado anteriormente."

# Production clients send Expires = Created + 60 000 s (protocol.md 4.3).
TTL = datetime.timedelta(seconds=60000)

checks = 0


def check(ok, what):
    global checks
    checks += 1
    if not ok:
        print(f"MISMATCH: {what}", file=sys.stderr)
        sys.exit(1)


def equal(got, want, what):
    check(got == want, f"{what}: got {got!r}, want {want!r}")


class AuthorityWsSecurity:
    """WS-Security as the authority requires it, built with xmlsec.

    zeep's own signers sign the Body and the Timestamp and name the key with
    X509Data; the authority wants a wsu:Timestamp, the certificate as a
    wsse:BinarySecurityToken and one RSA-SHA256 signature over wsa:To (exclusive
    C14N, InclusiveNamespaces), the key named by a SecurityTokenReference.
    zeep calls apply() on every request, after adding the WS-Addressing
    headers (wsa:Action, wsa:To) the WSDL asks for, and verify() on every
    answer.
    """

    def __init__(self, key_path, cert_path):
        self.key = xmlsec.Key.from_file(key_path, xmlsec.KeyFormat.PEM)
        with open(cert_path, encoding="ascii") as f:
            self.cert_b64 = "".join(
                line.strip() for line in f if not line.startswith("-----"))

    def apply(self, envelope, headers):
        header = envelope.find(f"{{{SOAP12}}}Header")
        to = header.find(f"{{{WSA}}}To") if header is not None else None
        check(to is not None, "zeep wrote wsa:To (the WSDL uses WS-Addressing)")
        u = uuid.uuid4().hex
        to_id, token_id = f"id-{u}", f"X509-{u}"
        to.set(f"{{{WSU}}}Id", to_id)

        security = etree.Element(f"{{{WSSE}}}Security", nsmap={"wsse": WSSE, "wsu": WSU})
        header.insert(0, security)
        now = datetime.datetime.now(datetime.timezone.utc)
        stamp = etree.SubElement(security, f"{{{WSU}}}Timestamp", {f"{{{WSU}}}Id": f"TS-{u}"})
        for name, at in (("Created", now), ("Expires", now + TTL)):
            etree.SubElement(stamp, f"{{{WSU}}}{name}").text = (
                at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z")
        token = etree.SubElement(security, f"{{{WSSE}}}BinarySecurityToken", {
            "EncodingType": BASE64, "ValueType": X509V3, f"{{{WSU}}}Id": token_id})
        token.text = self.cert_b64

        signature = xmlsec.template.create(
            envelope, xmlsec.Transform.EXCL_C14N, xmlsec.Transform.RSA_SHA256, ns="ds")
        security.append(signature)
        method = signature.find(".//{http://www.w3.org/2000/09/xmldsig#}CanonicalizationMethod")
        xmlsec.template.transform_add_c14n_inclusive_namespaces(method, ["wsa", "soap", "wcf"])
        ref = xmlsec.template.add_reference(signature, xmlsec.Transform.SHA256, uri=f"#{to_id}")
        transform = xmlsec.template.add_transform(ref, xmlsec.Transform.EXCL_C14N)
        xmlsec.template.transform_add_c14n_inclusive_namespaces(transform, ["soap", "wcf"])
        key_info = xmlsec.template.ensure_key_info(signature)

        ctx = xmlsec.SignatureContext()
        ctx.key = self.key
        ctx.register_id(to, "Id", WSU)
        ctx.sign(signature)
        # KeyInfo is not signed; xmlsec would not know how to fill this in.
        reference = etree.SubElement(key_info, f"{{{WSSE}}}SecurityTokenReference")
        etree.SubElement(reference, f"{{{WSSE}}}Reference",
                         {"URI": f"#{token_id}", "ValueType": X509V3})
        return envelope, headers

    def verify(self, envelope):
        # The authority's answers carry a timestamp, not a signature.
        stamp = envelope.find(f"{{{SOAP12}}}Header/{{{WSSE}}}Security/{{{WSU}}}Timestamp")
        check(stamp is not None, "the answer's wsse:Security has a wsu:Timestamp")
        return envelope


class SimulatorOnly(zeep.Transport):
    """Loads the WSDL and its schemas from the simulator and nowhere else."""

    def __init__(self, base):
        super().__init__()
        self.base = base

    def load(self, url):
        check(url.startswith(self.base), f"zeep loads {url} from the simulator only")
        return super().load(url)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def zip_without_xml():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("readme.txt", "no XML here")
    return buf.getvalue()


def items(array, member):
    """The items of a WCF collection. zeep reads an empty collection element
    as None and a nil one (xsi:nil on a complex type, which it does not
    honour) as an object without items, so the two are not told apart here;
    the simulator's nil/empty choice is checked against recorded authority
    answers on the Rust side."""
    return [] if array is None else list(getattr(array, member))


def check_accepted(r, doc, what):
    equal(r.IsValid, True, f"{what} IsValid")
    equal(r.StatusCode, "00", f"{what} StatusCode")
    equal(r.StatusDescription, DESC_OK, f"{what} StatusDescription")
    check(r.StatusMessage is not None and doc["number"] in r.StatusMessage
          and r.StatusMessage.endswith("ha sido autorizada."),
          f"{what} StatusMessage {r.StatusMessage!r}")
    equal(items(r.ErrorMessage, "string"), [], f"{what} ErrorMessage")
    equal(r.XmlDocumentKey, doc["cufe"], f"{what} XmlDocumentKey")
    equal(r.XmlFileName, doc["xml_file_name"], f"{what} XmlFileName")
    equal(r.XmlBytes, None, f"{what} XmlBytes")
    # XmlBase64Bytes is base64Binary: zeep hands over the decoded bytes, the
    # authority's ApplicationResponse for this document.
    check(isinstance(r.XmlBase64Bytes, bytes), f"{what} XmlBase64Bytes is bytes")
    ar = etree.fromstring(r.XmlBase64Bytes)
    equal(ar.tag, f"{{{UBL_AR}}}ApplicationResponse", f"{what} XmlBase64Bytes root")
    equal(ar.findtext(f".//{{{CBC}}}UUID"), doc["cufe"], f"{what} ApplicationResponse UUID")
    equal(ar.findtext(f".//{{{CBC}}}ResponseCode"), "02", f"{what} ApplicationResponse code")


def check_rejected(r, messages, key, file_name, what):
    equal(r.IsValid, False, f"{what} IsValid")
    equal(r.StatusCode, "99", f"{what} StatusCode")
    equal(r.StatusDescription, DESC_ERRORS, f"{what} StatusDescription")
    got = items(r.ErrorMessage, "string")
    equal(len(got), len(messages), f"{what} number of ErrorMessage strings ({got})")
    for g, prefix in zip(got, messages):
        check(g.startswith(prefix), f"{what} ErrorMessage {g!r} starts with {prefix!r}")
    equal(r.StatusMessage, None, f"{what} StatusMessage")
    equal(r.XmlBase64Bytes, None, f"{what} XmlBase64Bytes")
    equal(r.XmlBytes, None, f"{what} XmlBytes")
    equal(r.XmlDocumentKey, key, f"{what} XmlDocumentKey")
    equal(r.XmlFileName, file_name, f"{what} XmlFileName")


def check_contract(client):
    """The WSDL's DianResponse is the authority's contract, member by member."""
    t = client.get_type(f"{{{DIAN_RESPONSE}}}DianResponse")
    equal([name for name, _ in t.elements],
          ["ErrorMessage", "IsValid", "StatusCode", "StatusDescription", "StatusMessage",
           "XmlBase64Bytes", "XmlBytes", "XmlDocumentKey", "XmlFileName"],
          "DianResponse members in order")


def main(case_path):
    with open(case_path, encoding="utf-8") as f:
        case = json.load(f)
    base = case["service"]
    wsse = AuthorityWsSecurity(case["key"], case["cert"])
    client = zeep.Client(f"{base}?wsdl", wsse=wsse, transport=SimulatorOnly(base))
    check_contract(client)
    svc = client.service
    acc, rej, asy = case["accepted"], case["rejected"], case["async"]

    # GetNumberingRange: the issuer's ranges, field by field.
    r = svc.GetNumberingRange(accountCode=case["nit"], accountCodeT=case["nit"],
                              softwareCode=case["software"])
    equal(r.OperationCode, "100", "GetNumberingRange OperationCode")
    check(bool(r.OperationDescription), "GetNumberingRange OperationDescription")
    got = items(r.ResponseList, "NumberRangeResponse")
    equal(len(got), len(case["ranges"]), "number of ranges")
    for item, want in zip(got, case["ranges"]):
        for field, value in want.items():
            equal(getattr(item, field), value, f"range {want['Prefix']} {field}")
    r = svc.GetNumberingRange(accountCode=case["nit"], accountCodeT=case["nit"],
                              softwareCode="no-such-software")
    equal(r.OperationCode, "301", "GetNumberingRange unknown software")
    equal(items(r.ResponseList, "NumberRangeResponse"), [], "no ranges")
    print("GetNumberingRange ok")

    # SendBillSync: one accepted, one rejected, the accepted one again.
    r = svc.SendBillSync(fileName=acc["file_name"], contentFile=read(acc["zip"]))
    check_accepted(r, acc, "SendBillSync accepted")
    r = svc.SendBillSync(fileName=rej["file_name"], contentFile=read(rej["zip"]))
    check_rejected(r, [f"Regla: {rej['rule']}, Rechazo: "], rej["cufe"], rej["xml_file_name"],
                   "SendBillSync rejected")
    r = svc.SendBillSync(fileName=acc["file_name"], contentFile=read(acc["zip"]))
    check_rejected(r, [DUPLICATE], acc["cufe"], acc["xml_file_name"], "SendBillSync again")
    print("SendBillSync ok")

    # GetStatus: what became of each, and a track id never seen.
    check_accepted(svc.GetStatus(trackId=acc["cufe"]), acc, "GetStatus accepted")
    r = svc.GetStatus(trackId=rej["cufe"])
    check_rejected(r, [f"Regla: {rej['rule']}, Rechazo: "], rej["cufe"], None,
                   "GetStatus rejected")
    unknown = "0" * 96
    r = svc.GetStatus(trackId=unknown)
    equal(r.IsValid, False, "GetStatus unknown IsValid")
    equal(r.StatusCode, "66", "GetStatus unknown StatusCode")
    equal(r.StatusDescription, "TrackId no encontrado", "GetStatus unknown StatusDescription")
    equal(items(r.ErrorMessage, "string"), [], "GetStatus unknown ErrorMessage")
    equal(r.XmlDocumentKey, unknown, "GetStatus unknown XmlDocumentKey")
    for field in ("StatusMessage", "XmlBase64Bytes", "XmlBytes", "XmlFileName"):
        equal(getattr(r, field), None, f"GetStatus unknown {field}")
    print("GetStatus ok")

    # GetXmlByDocumentKey: the accepted document as its issuer sent it (the
    # client's certificate names the issuer), an unknown code, a short one.
    r = svc.GetXmlByDocumentKey(trackId=acc["cufe"])
    equal(r.Code, "100", "GetXmlByDocumentKey Code")
    equal(r.Message, "Accion completada OK", "GetXmlByDocumentKey Message")
    with zipfile.ZipFile(acc["zip"]) as z:
        sent = z.read(z.namelist()[0])
    equal(base64.b64decode(r.XmlBytesBase64), sent, "GetXmlByDocumentKey XmlBytesBase64")
    r = svc.GetXmlByDocumentKey(trackId=unknown)
    equal(r.Code, "404", "GetXmlByDocumentKey unknown Code")
    equal(r.Message, f"Xml con CUFE: '{unknown}' no encontrado.", "GetXmlByDocumentKey unknown Message")
    equal(r.XmlBytesBase64, None, "GetXmlByDocumentKey unknown XmlBytesBase64")
    equal(svc.GetXmlByDocumentKey(trackId="abc").Code, "89", "GetXmlByDocumentKey short Code")
    print("GetXmlByDocumentKey ok")

    # SendBillAsync, then GetStatusZip until the batch is done.
    r = svc.SendBillAsync(fileName=asy["file_name"], contentFile=read(asy["zip"]))
    equal(items(r.ErrorMessageList, "XmlParamsResponseTrackId"), [],
          "SendBillAsync ErrorMessageList")
    check(bool(r.ZipKey), "SendBillAsync ZipKey")
    print("SendBillAsync ok")
    deadline = time.monotonic() + 60
    while True:
        answer = svc.GetStatusZip(trackId=r.ZipKey)
        # zeep hands a result with one member over as that member: the list.
        batch = answer if isinstance(answer, list) else items(answer, "DianResponse")
        equal(len(batch), 1, "GetStatusZip answers")
        if batch[0].StatusDescription != DESC_PENDING:
            break
        equal(batch[0].IsValid, False, "pending IsValid")
        check(batch[0].StatusCode in ("", None), "pending StatusCode is empty")
        equal(items(batch[0].ErrorMessage, "string"), [], "pending ErrorMessage")
        equal(batch[0].XmlDocumentKey, None, "pending XmlDocumentKey")
        check(time.monotonic() < deadline, "the batch is done within 60 s")
        time.sleep(0.5)
    check_accepted(batch[0], asy, "GetStatusZip")
    print("GetStatusZip ok")

    # SendTestSetAsync for a test set the authority does not know.
    r = svc.SendTestSetAsync(fileName=asy["file_name"], contentFile=read(asy["zip"]),
                             testSetId="no-such-set")
    equal(r.ZipKey, None, "SendTestSetAsync ZipKey")
    errors = items(r.ErrorMessageList, "XmlParamsResponseTrackId")
    equal(len(errors), 1, "SendTestSetAsync errors")
    equal(errors[0].Success, False, "SendTestSetAsync Success")
    equal(errors[0].ProcessedMessage, "Set de pruebas con identificador no-such-set no existe.",
          "SendTestSetAsync ProcessedMessage")
    equal(errors[0].XmlFileName, asy["file_name"], "SendTestSetAsync XmlFileName")
    equal(errors[0].DocumentKey, None, "SendTestSetAsync DocumentKey")
    equal(errors[0].SenderCode, None, "SendTestSetAsync SenderCode")
    print("SendTestSetAsync ok")

    # SendNominaSync and SendEventUpdateStatus answer DianResponse too.
    empty = zip_without_xml()
    check_rejected(svc.SendNominaSync(contentFile=empty), ["Regla: 89, Rechazo: "], None, None,
                   "SendNominaSync")
    print("SendNominaSync ok")
    check_rejected(svc.SendEventUpdateStatus(contentFile=empty), ["Regla: 89, Rechazo: "], None,
                   None, "SendEventUpdateStatus")
    print("SendEventUpdateStatus ok")

    # GetAcquirer: the issuer by its NIT, with the name it registered. An
    # unknown buyer is answered, as the authority does, with HTTP 404 and a
    # valid SOAP body without a fault; zeep raises on it and carries the
    # body in the fault's detail.
    r = svc.GetAcquirer(identificationType="31", identificationNumber=case["nit"])
    equal(r.StatusCode, "00", "GetAcquirer StatusCode")
    equal(r.Message, "Operación exitosa", "GetAcquirer Message")
    equal(r.ReceiverName, case["name"], "GetAcquirer ReceiverName")
    try:
        svc.GetAcquirer(identificationType="13", identificationNumber="6382356")
        check(False, "GetAcquirer unknown: zeep raises on HTTP 404")
    except zeep.exceptions.Fault as fault:
        detail = fault.detail.decode("utf-8") if isinstance(fault.detail, bytes) else str(fault.detail)
        check("El adquirente No existe en la base de datos" in detail, "GetAcquirer unknown Message")
        check("<b:StatusCode>404</b:StatusCode>" in detail, "GetAcquirer unknown StatusCode")
    print("GetAcquirer ok")

    # GetStatusEvent: the accepted invoice has no events yet (67, its
    # ApplicationResponse lists none); an unknown code is 66.
    r = svc.GetStatusEvent(trackId=acc["cufe"])
    equal(r.StatusCode, "67", "GetStatusEvent StatusCode")
    equal(r.IsValid, False, "GetStatusEvent IsValid")
    equal(r.XmlDocumentKey, acc["cufe"], "GetStatusEvent XmlDocumentKey")
    ar = etree.fromstring(r.XmlBase64Bytes)
    equal(etree.QName(ar).localname, "ApplicationResponse", "GetStatusEvent ApplicationResponse")
    equal(len(ar.findall("{urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2}DocumentResponse")),
          0, "GetStatusEvent no events")
    equal(svc.GetStatusEvent(trackId=unknown).StatusCode, "66", "GetStatusEvent unknown")
    print("GetStatusEvent ok")

    # ?singleWsdl carries the same types inline.
    single = zeep.Client(f"{base}?singleWsdl", wsse=wsse, transport=SimulatorOnly(base))
    check_contract(single)
    check_accepted(single.service.GetStatus(trackId=acc["cufe"]), acc, "singleWsdl GetStatus")
    print("singleWsdl ok")

    print(f"ok: {checks} checks")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
