//! AS2 through HTTP in the nestings pyas2lib does not make (tests/clients/as2_client.py drives
//! pyas2lib itself): sign-then-compress inside encryption with a base64 transfer encoding, the
//! receipt's MIC and signature checked with OpenSSL against the exact signed part; plain EDI with a
//! receipt asked; an invalid interchange and a refused message answered with error MDNs; no
//! receipt asked, the refusal stays HTTP; opaque signed-data under AES-GCM (authEnveloped-data),
//! built by the `openssl cms` command; what `partner add` prints for a partner's gateway. On SQLite
//! and PostgreSQL.

mod common;

use std::io::Write;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::partners::{ADMIN, register, secured};
use common::{Backend, Harness, Reply, numbered};
use edi_inbox::config::ServerConfig;
use openssl::asn1::Asn1Time;
use openssl::cms::{CMSOptions, CmsContentInfo};
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private};
use openssl::rsa::Rsa;
use openssl::stack::Stack;
use openssl::symm::Cipher;
use openssl::x509::{X509, X509NameBuilder};
use serde_json::json;

/// A key and its self-signed certificate.
struct Pair {
    key: PKey<Private>,
    certificate: X509,
}

impl Pair {
    fn new(name: &str) -> Pair {
        let key = PKey::from_rsa(Rsa::generate(2048).unwrap()).unwrap();
        let mut subject = X509NameBuilder::new().unwrap();
        subject.append_entry_by_text("CN", name).unwrap();
        let subject = subject.build();
        let mut builder = X509::builder().unwrap();
        builder.set_version(2).unwrap();
        let mut serial = openssl::bn::BigNum::new().unwrap();
        serial.rand(64, openssl::bn::MsbOption::MAYBE_ZERO, false).unwrap();
        builder.set_serial_number(&serial.to_asn1_integer().unwrap()).unwrap();
        builder.set_subject_name(&subject).unwrap();
        builder.set_issuer_name(&subject).unwrap();
        builder.set_pubkey(&key).unwrap();
        builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
        builder.set_not_after(&Asn1Time::days_from_now(30).unwrap()).unwrap();
        builder.sign(&key, MessageDigest::sha256()).unwrap();
        Pair { key, certificate: builder.build() }
    }

    fn certificate_pem(&self) -> String {
        String::from_utf8(self.certificate.to_pem().unwrap()).unwrap()
    }

    /// Key and certificate in one PEM file, as `--as2-keys` reads them.
    fn write(&self) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("edi-inbox-as2-{}.pem", uuid::Uuid::now_v7()));
        let mut pem = self.key.private_key_to_pem_pkcs8().unwrap();
        pem.extend(self.certificate.to_pem().unwrap());
        std::fs::write(&path, pem).unwrap();
        path
    }
}

/// `multipart/signed` around `entity` (headers included): the signed part as sent, and the whole.
fn signed(entity: &[u8], signer: &Pair) -> (Vec<u8>, Vec<u8>) {
    let cms = CmsContentInfo::sign(
        Some(&signer.certificate),
        Some(&signer.key),
        None,
        Some(entity),
        CMSOptions::DETACHED | CMSOptions::BINARY,
    )
    .unwrap();
    let signature = STANDARD.encode(cms.to_der().unwrap());
    let mut whole = b"Content-Type: multipart/signed; protocol=\"application/pkcs7-signature\"; micalg=sha-256;\r\n\tboundary=\"sig-b\"\r\n\r\n--sig-b\r\n".to_vec();
    whole.extend_from_slice(entity);
    whole.extend_from_slice(
        format!("\r\n--sig-b\r\nContent-Type: application/pkcs7-signature\r\nContent-Transfer-Encoding: base64\r\n\r\n{signature}\r\n--sig-b--\r\n")
            .as_bytes(),
    );
    (entity.to_vec(), whole)
}

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    match content.len() {
        n if n < 0x80 => out.push(n as u8),
        n if n < 0x100 => out.extend([0x81, n as u8]),
        n => out.extend([0x82, (n >> 8) as u8, n as u8]),
    }
    out.extend_from_slice(content);
    out
}

/// An RFC 3274 compressed-data entity around `entity`, base64 as its transfer encoding.
fn compressed(entity: &[u8]) -> Vec<u8> {
    const ID_DATA: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01];
    const COMPRESSED_DATA: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x10, 0x01, 0x09];
    const ZLIB: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x10, 0x03, 0x08];
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    zlib.write_all(entity).unwrap();
    let stream = zlib.finish().unwrap();
    let encapsulated = tlv(0x30, &[tlv(0x06, ID_DATA), tlv(0xA0, &tlv(0x04, &stream))].concat());
    let data = tlv(0x30, &[tlv(0x02, &[0]), tlv(0x30, &tlv(0x06, ZLIB)), encapsulated].concat());
    let info = tlv(0x30, &[tlv(0x06, COMPRESSED_DATA), tlv(0xA0, &data)].concat());
    let mut out = b"Content-Type: application/pkcs7-mime; smime-type=compressed-data; name=smime.p7z\r\nContent-Transfer-Encoding: base64\r\n\r\n".to_vec();
    out.extend(STANDARD.encode(info).as_bytes().chunks(76).flat_map(|line| [line, b"\r\n"].concat()));
    out
}

/// The DER of `entity` encrypted to `recipient` (AES-128-CBC).
fn encrypted(entity: &[u8], recipient: &Pair) -> Vec<u8> {
    let mut recipients = Stack::new().unwrap();
    recipients.push(recipient.certificate.clone()).unwrap();
    let cms =
        CmsContentInfo::encrypt(&recipients, entity, Cipher::aes_128_cbc(), CMSOptions::BINARY).unwrap();
    cms.to_der().unwrap()
}

fn edi_entity(control: u32) -> Vec<u8> {
    [b"Content-Type: application/edi-x12\r\n\r\n".to_vec(), numbered(control)].concat()
}

const RECEIPT_OPTIONS: &str =
    "signed-receipt-protocol=optional, pkcs7-signature; signed-receipt-micalg=optional, sha-256";

/// The headers of a gateway asking for a signed synchronous receipt.
const RECEIPT_ASKED: [(&str, &str); 2] = [
    ("disposition-notification-to", "edi@acme.example"),
    ("disposition-notification-options", RECEIPT_OPTIONS),
];

async fn post(h: &Harness, content_type: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Reply {
    let mut request = h
        .app
        .client
        .post(h.app.url("/v1/interchanges"))
        .header("content-type", content_type)
        .header("as2-from", "\"ACME AS2\"")
        .header("as2-to", "BUYERCO")
        .header("as2-version", "1.2");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    Reply::send(request.body(body)).await
}

/// The `message/disposition-notification` fields of an MDN answer, after checking its signature
/// over the exact first part with `station`'s certificate.
fn verified_receipt(reply: &Reply, station: &Pair) -> String {
    assert_eq!(reply.status, 200, "{}", reply.text);
    let content_type = reply.header("content-type").unwrap();
    assert!(content_type.starts_with("multipart/signed"), "{content_type}");
    let boundary = content_type.split("boundary=\"").nth(1).unwrap().trim_end_matches('"');
    let delimiter = format!("--{boundary}");
    let parts: Vec<&str> = reply.text.split(&delimiter).collect();
    let first = parts[1].strip_prefix("\r\n").unwrap().strip_suffix("\r\n").unwrap();
    let signature = parts[2].split("\r\n\r\n").nth(1).unwrap().replace("\r\n", "");
    let mut cms = CmsContentInfo::from_der(&STANDARD.decode(signature).unwrap()).unwrap();
    let mut certificates = Stack::new().unwrap();
    certificates.push(station.certificate.clone()).unwrap();
    let flags = CMSOptions::BINARY | CMSOptions::NOINTERN | CMSOptions::NO_SIGNER_CERT_VERIFY;
    cms.verify(Some(&certificates), None, Some(first.as_bytes()), None, flags)
        .unwrap_or_else(|e| panic!("the MDN's signature does not verify ({e}): {}", reply.text));
    first.split("message/disposition-notification").nth(1).unwrap().to_owned()
}

/// The fields of a verified receipt saying `processed`, with the MIC of `signed` (the entity the
/// partner's signature covers).
fn processed_receipt(reply: &Reply, station: &Pair, signed: &[u8]) -> String {
    let fields = verified_receipt(reply, station);
    assert!(
        fields.contains("Disposition: automatic-action/MDN-sent-automatically; processed\r\n"),
        "{fields}"
    );
    assert!(fields.contains(&format!("Received-Content-MIC: {}, sha-256", mic(signed))), "{fields}");
    fields
}

fn mic(content: &[u8]) -> String {
    STANDARD.encode(openssl::hash::hash(MessageDigest::sha256(), content).unwrap())
}

/// Sign, then compress, then encrypt (base64 on the wire): booked once, every resend `processed`
/// with the MIC of the exact signed part; an invalid interchange and a message of another signer
/// get error MDNs and book nothing; without a receipt asked, a refusal is an HTTP 401.
async fn an_as2_gateway_gets_a_receipt_for_every_final_outcome(backend: Backend) {
    let (station, partner, stranger) = (Pair::new("edi-inbox"), Pair::new("acme"), Pair::new("mallory"));
    let keys = station.write();
    let server =
        ServerConfig { as2_keys: vec![keys.clone()], as2_receiver_ids: vec!["BUYERCO".into()], ..secured() };
    let h = Harness::with_server(backend, server).await;
    register_acme(&h, &partner).await;
    let (signed_part, signed_entity) = signed(&edi_entity(601), &partner);
    let wire = STANDARD.encode(encrypted(&compressed(&signed_entity), &station)).into_bytes();
    let smime = "application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m";
    let mut headers = RECEIPT_ASKED.to_vec();
    headers.extend([("content-transfer-encoding", "base64"), ("message-id", "<sign-then-compress@acme>")]);
    for _ in 0..2 {
        let reply = post(&h, smime, &headers, wire.clone()).await;
        let fields = processed_receipt(&reply, &station, &signed_part);
        assert!(fields.contains("Original-Message-ID: <sign-then-compress@acme>"), "{fields}");
        assert_eq!(reply.header("as2-to"), Some("\"ACME AS2\""));
    }
    assert_eq!(invoices(&h).await, 1);

    let wrong_count = String::from_utf8(numbered(602)).unwrap().replace("SE*18*0001", "SE*17*0001");
    let broken = [b"Content-Type: application/edi-x12\r\n\r\n".to_vec(), wrong_count.into_bytes()].concat();
    let (_, broken) = signed(&broken, &partner);
    let reply = post(&h, smime, &RECEIPT_ASKED, encrypted(&broken, &station)).await;
    let fields = verified_receipt(&reply, &station);
    assert!(fields.contains("; processed/error: unexpected-processing-error\r\n"), "{fields}");
    assert!(reply.text.contains("SE01"), "the problem's detail is in the MDN: {}", reply.text);

    let (_, foreign) = signed(&edi_entity(603), &stranger);
    let reply = post(&h, smime, &RECEIPT_ASKED, encrypted(&foreign, &station)).await;
    let fields = verified_receipt(&reply, &station);
    assert!(
        fields.contains("; processed/error: authentication-failed\r\n"),
        "inside encryption, once the plaintext reads strictly, a foreign signer is named: {fields}"
    );
    let (_, plain_foreign) = signed(&edi_entity(604), &stranger);
    let reply = post(
        &h,
        "multipart/signed; boundary=sig-b",
        &RECEIPT_ASKED,
        plain_foreign[plain_foreign.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4..].to_vec(),
    )
    .await;
    let fields = verified_receipt(&reply, &station);
    assert!(fields.contains("; processed/error: authentication-failed\r\n"), "{fields}");
    let reply = post(&h, "application/edi-x12", &RECEIPT_ASKED, numbered(605)).await;
    let fields = verified_receipt(&reply, &station);
    assert!(
        fields.contains("; processed/error: authentication-failed\r\n"),
        "unsigned, no API key: whatever the partner requires, no proof: {fields}"
    );

    let reply = post(&h, smime, &[], encrypted(&foreign, &station)).await;
    reply.assert_problem(401, "unauthorized");
    assert_eq!(invoices(&h).await, 1, "nothing refused was booked");
    let _ = std::fs::remove_file(keys);
    h.finish().await;
}

/// The EDI straight in the body with a receipt asked, in open mode: an unsigned MDN says
/// `processed` for the first delivery and its resend (one invoice), and the attempt records it.
async fn plain_edi_with_a_receipt_asked_is_answered_with_an_mdn(backend: Backend) {
    let h = Harness::start(backend).await;
    let asked = [("disposition-notification-to", "edi@acme.example"), ("message-id", "<plain-1@acme>")];
    for _ in 0..2 {
        let reply = post(&h, "application/edi-x12", &asked, numbered(611)).await;
        assert_eq!(reply.status, 200, "{}", reply.text);
        assert!(
            reply
                .header("content-type")
                .unwrap()
                .starts_with("multipart/report; report-type=disposition-notification")
        );
        assert!(reply.text.contains("; processed\r\n"), "{}", reply.text);
        assert!(
            reply.text.contains(&format!("Received-Content-MIC: {}, sha-256", mic(&numbered(611)))),
            "{}",
            reply.text
        );
    }
    assert_eq!(h.app.all_invoices().await.len(), 1);
    let listed = Reply::send(h.app.client.get(h.app.url("/v1/interchanges?control_number=000000611"))).await;
    let id = listed.json()["items"][0]["id"].as_str().unwrap().to_owned();
    let attempts = common::eventually(async || attempts_of(&h, &id).await, |items| items.len() == 2).await;
    let receipts: Vec<(&str, &str)> = attempts
        .iter()
        .map(|attempt| {
            (
                attempt["transport"]["mdn"].as_str().unwrap(),
                attempt["transport"]["mdn_mode"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        receipts,
        [("processed", "sync"); 2],
        "the first attempt (written with the claim) and the resend"
    );
    h.finish().await;
}

/// One BER/DER value, its children read when it is constructed (definite lengths only, as
/// OpenSSL writes them).
enum Der {
    Leaf(u8, Vec<u8>),
    Tree(u8, Vec<Der>),
}

fn der_values(mut input: &[u8]) -> Vec<Der> {
    let mut values = Vec::new();
    while !input.is_empty() {
        let tag = input[0];
        let (length, header) = match input[1] {
            n if n < 0x80 => (usize::from(n), 2),
            n => {
                let count = usize::from(n & 0x7F);
                (input[2..2 + count].iter().fold(0, |length, &b| (length << 8) | usize::from(b)), 2 + count)
            }
        };
        let content = &input[header..header + length];
        values.push(if tag & 0x20 != 0 {
            Der::Tree(tag, der_values(content))
        } else {
            Der::Leaf(tag, content.to_vec())
        });
        input = &input[header + length..];
    }
    values
}

fn der_bytes(values: &[Der]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|value| match value {
            Der::Leaf(tag, content) => tlv(*tag, content),
            Der::Tree(tag, children) => tlv(*tag, &der_bytes(children)),
        })
        .collect()
}

/// The last `[0] IMPLICIT` primitive value: an EnvelopedData's encrypted content.
fn encrypted_content(values: &mut [Der]) -> Option<&mut Vec<u8>> {
    values.iter_mut().rev().find_map(|value| match value {
        Der::Leaf(0x80, content) => Some(content),
        Der::Leaf(..) => None,
        Der::Tree(_, children) => encrypted_content(children),
    })
}

/// The padding-oracle query of issue 28 against a captured CBC message: its last two ciphertext
/// blocks appended again, so that the plaintext ends with noise and then the original last block,
/// whose padding is valid; `flip` changes the appended block before it, so that it (almost
/// certainly) is not.
fn with_blocks_appended(der: &[u8], flip: bool) -> Vec<u8> {
    let mut values = der_values(der);
    let content = encrypted_content(&mut values).expect("encrypted content");
    let tail = content[content.len() - 32..].to_vec();
    content.extend(tail);
    if flip {
        let at = content.len() - 17;
        content[at] ^= 0x5A;
    }
    der_bytes(&values)
}

/// A captured CBC message with ciphertext blocks appended is a decryption failure whether its
/// padding is valid or not, answered alike (before, a valid padding was answered `processed`: an
/// oracle that decrypts a block in a few thousand requests); AES-GCM (`authEnveloped-data`) opens.
async fn appended_ciphertext_blocks_teach_nothing(backend: Backend) {
    let (station, partner) = (Pair::new("edi-inbox"), Pair::new("acme"));
    let keys = station.write();
    let server = ServerConfig { as2_keys: vec![keys.clone()], ..secured() };
    let h = Harness::with_server(backend, server).await;
    register_acme(&h, &partner).await;
    let asked = [("disposition-notification-to", "edi@acme.example"), ("message-id", "<oracle@acme>")];
    let smime = "application/pkcs7-mime; smime-type=enveloped-data";
    let (_, entity) = signed(&edi_entity(621), &partner);
    let captured = encrypted(&entity, &station);
    let fields =
        |reply: &Reply| reply.text.split("Disposition: ").nth(1).unwrap().lines().next().unwrap().to_owned();
    let first = post(&h, smime, &asked, captured.clone()).await;
    assert_eq!(fields(&first), "automatic-action/MDN-sent-automatically; processed", "{}", first.text);
    let valid_padding = post(&h, smime, &asked, with_blocks_appended(&captured, false)).await;
    let invalid_padding = post(&h, smime, &asked, with_blocks_appended(&captured, true)).await;
    for reply in [&valid_padding, &invalid_padding] {
        assert_eq!(reply.status, 200);
        assert_eq!(
            fields(reply),
            "automatic-action/MDN-sent-automatically; processed/error: decryption-failed"
        );
    }
    assert_eq!(valid_padding.text.len(), invalid_padding.text.len(), "the same answer, the same size");
    assert_eq!(invoices(&h).await, 1);

    let mut recipients = Stack::new().unwrap();
    recipients.push(station.certificate.clone()).unwrap();
    let (_, entity) = signed(&edi_entity(622), &partner);
    let gcm =
        CmsContentInfo::encrypt(&recipients, &entity, Cipher::aes_256_gcm(), CMSOptions::BINARY).unwrap();
    let reply =
        post(&h, "application/pkcs7-mime; smime-type=authEnveloped-data", &asked, gcm.to_der().unwrap())
            .await;
    assert_eq!(fields(&reply), "automatic-action/MDN-sent-automatically; processed", "{}", reply.text);
    assert_eq!(invoices(&h).await, 2);
    let _ = std::fs::remove_file(keys);
    h.finish().await;
}

/// `GET /v1/as2/certificate` serves the first key's certificate to anybody (partner authentication
/// on, no credential), PEM or DER as asked; a server without a key answers 404 `not-found`.
async fn the_certificate_is_served_to_partners(backend: Backend) {
    let (station, older) = (Pair::new("edi-inbox"), Pair::new("edi-inbox-old"));
    let keys = [station.write(), older.write()];
    let h = Harness::with_server(backend, ServerConfig { as2_keys: keys.to_vec(), ..secured() }).await;
    let url = h.app.url("/v1/as2/certificate");
    let pem = Reply::send(h.app.client.get(&url)).await;
    assert_eq!(pem.status, 200, "{}", pem.text);
    assert_eq!(pem.header("content-type"), Some("application/pem-certificate-chain"));
    assert_eq!(pem.text, station.certificate_pem());
    let der = h.app.client.get(&url).header("accept", "application/pkix-cert").send().await.unwrap();
    assert_eq!(der.headers()["content-type"], "application/pkix-cert");
    assert_eq!(der.bytes().await.unwrap().to_vec(), station.certificate.to_der().unwrap());
    h.finish().await;
    keys.iter().for_each(|key| std::fs::remove_file(key).unwrap());
    let h = Harness::with_server(backend, secured()).await;
    let none = Reply::send(h.app.client.get(h.app.url("/v1/as2/certificate"))).await;
    assert_eq!(
        (none.status, none.json()["type"].as_str()),
        (404, Some("/problems/not-found")),
        "{}",
        none.text
    );
    h.finish().await;
}

/// `openssl cms ARGS` (OpenSSL's own command, a sender independent of this service's code) on
/// `input`, its DER output.
fn openssl_cms(args: &[&str], input: &[u8]) -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("edi-inbox-cms-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir(&dir).unwrap();
    let (source, output) = (dir.join("in"), dir.join("out.der"));
    std::fs::write(&source, input).unwrap();
    let status = std::process::Command::new("openssl")
        .arg("cms")
        .args(args)
        .args(["-binary", "-outform", "DER", "-in"])
        .arg(&source)
        .arg("-out")
        .arg(&output)
        .status()
        .expect("the openssl command runs (Debian's openssl package)");
    assert!(status.success(), "openssl cms {args:?} failed");
    let der = std::fs::read(&output).unwrap();
    std::fs::remove_dir_all(dir).unwrap();
    der
}

/// Opaque `signed-data` (the EDI entity inside the signature) encrypted with AES-256-GCM
/// (`authEnveloped-data`), as gateways send with modern settings, built by `openssl cms`: booked
/// once, the resend `processed` too, each receipt with the MIC of the entity the signature carries;
/// content changed under the signature gets `integrity-check-failed` and books nothing.
async fn opaque_signed_data_under_authenticated_encryption_is_booked_once(backend: Backend) {
    let (station, partner) = (Pair::new("edi-inbox"), Pair::new("acme"));
    let (keys, signer) = (station.write(), partner.write());
    let recipient = std::env::temp_dir().join(format!("edi-inbox-as2-{}.crt", uuid::Uuid::now_v7()));
    std::fs::write(&recipient, station.certificate_pem()).unwrap();
    let server =
        ServerConfig { as2_keys: vec![keys.clone()], as2_receiver_ids: vec!["BUYERCO".into()], ..secured() };
    let h = Harness::with_server(backend, server).await;
    register_acme(&h, &partner).await;
    let signer_path = signer.to_str().unwrap();
    let sign = |entity: &[u8]| {
        openssl_cms(
            &["-sign", "-nodetach", "-md", "sha256", "-signer", signer_path, "-inkey", signer_path],
            entity,
        )
    };
    let encrypt = |signed: &[u8]| {
        let entity = [
            b"Content-Type: application/pkcs7-mime; smime-type=signed-data; name=smime.p7m\r\n\r\n"
                .as_slice(),
            signed,
        ]
        .concat();
        openssl_cms(&["-encrypt", "-aes-256-gcm", "-recip", recipient.to_str().unwrap()], &entity)
    };
    let smime = "application/pkcs7-mime; smime-type=authEnveloped-data; name=smime.p7m";
    let entity = edi_entity(701);
    let wire = encrypt(&sign(&entity));
    for _ in 0..2 {
        let reply = post(&h, smime, &RECEIPT_ASKED, wire.clone()).await;
        processed_receipt(&reply, &station, &entity);
    }
    assert_eq!(invoices(&h).await, 1);

    let mut changed = sign(&edi_entity(702));
    let at = changed.windows(6).position(|w| w == b"ST*810").unwrap();
    changed[at + 5] = b'1';
    let reply = post(&h, smime, &RECEIPT_ASKED, encrypt(&changed)).await;
    let fields = verified_receipt(&reply, &station);
    assert!(fields.contains("; processed/error: integrity-check-failed\r\n"), "{fields}");
    assert_eq!(invoices(&h).await, 1, "nothing refused was booked");
    h.finish().await;
    [keys, signer, recipient].iter().for_each(|path| std::fs::remove_file(path).unwrap());
}

/// `partner add` with an AS2 name prints what the partner's gateway must be configured with. On
/// SQLite the certificate is that of the key `serve` then uses (generated beside the database),
/// its fingerprint as `openssl x509` computes it, and `serve` serves the same one; on PostgreSQL,
/// where no key is generated without `--as2-generated-key`, there is none to give. A partner
/// without an AS2 name gets no such settings.
async fn partner_add_prints_what_the_gateway_must_configure(backend: Backend) {
    let db = common::migrated(backend).await;
    let partner = Pair::new("acme");
    let certificate = partner.certificate_pem();
    let added = common::process::command(
        &db.url,
        &[
            "--as2-receiver-ids",
            "BUYERCO-AS2",
            "partner",
            "add",
            "acme",
            "--name",
            "ACME",
            "--sender",
            "x12:ZZ:ACMESUPPLY",
            "--as2-id",
            "ACME-AS2",
            "--as2-certificate",
            &certificate,
            "--as2-security",
            "signed-encrypted",
            "--as2-mdn-url",
            "https://as2.acme.example/mdn",
        ],
    )
    .output()
    .unwrap();
    assert!(added.status.success(), "{}", String::from_utf8_lossy(&added.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&added.stdout).unwrap();
    let gateway = &printed["as2_gateway"];
    assert_eq!(gateway["url"], "http://127.0.0.1:8080/v1/interchanges");
    assert_eq!(gateway["as2_from"], json!(["ACME-AS2"]));
    assert_eq!(gateway["as2_to"], json!(["BUYERCO-AS2"]));
    assert_eq!(gateway["security"], "signed-encrypted");
    assert_eq!(gateway["mdn_urls"], json!(["https://as2.acme.example/mdn"]));
    assert_eq!(gateway["certificate_url"], "http://127.0.0.1:8080/v1/as2/certificate");
    assert!(gateway["receipt"].as_str().unwrap().contains("signed MDN"), "{gateway}");
    match backend {
        Backend::Sqlite => {
            let pem = gateway["certificate"].as_str().expect("a certificate to encrypt to");
            let fingerprint = openssl_fingerprint(pem);
            assert_eq!(gateway["certificate_sha256"].as_str(), Some(fingerprint.as_str()));
            let server = common::process::Process::start(
                common::process::command(&db.url, &["--bind", "127.0.0.1:0", "serve"]),
                true,
            );
            let served = reqwest::get(server.url("/v1/as2/certificate")).await.unwrap().text().await.unwrap();
            assert_eq!(served, pem, "serve uses the key partner add gave the certificate of");
        }
        Backend::Postgres => {
            assert_eq!(
                (&gateway["certificate"], &gateway["certificate_sha256"]),
                (&json!(null), &json!(null))
            );
        }
    }
    let plain = common::process::command(
        &db.url,
        &["partner", "add", "globex", "--name", "Globex", "--sender", "x12:ZZ:GLOBEX"],
    )
    .output()
    .unwrap();
    assert!(plain.status.success(), "{}", String::from_utf8_lossy(&plain.stderr));
    let printed: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert_eq!(printed.get("as2_gateway"), None, "{printed}");
    db.remove().await;
}

/// The SHA-256 fingerprint of a PEM certificate as the `openssl x509` command prints it.
fn openssl_fingerprint(pem: &str) -> String {
    let mut command = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the openssl command runs");
    command.stdin.take().unwrap().write_all(pem.as_bytes()).unwrap();
    let output = command.wait_with_output().unwrap();
    let printed = String::from_utf8(output.stdout).unwrap();
    printed.trim().rsplit('=').next().unwrap().to_owned()
}

/// ACME, known by its AS2 name and signing certificate, which must sign and encrypt.
async fn register_acme(h: &Harness, partner: &Pair) {
    register(
        h,
        json!({"id": "acme", "name": "ACME", "senders": ["x12:ZZ:ACMESUPPLY"], "as2_ids": ["ACME AS2"],
            "as2_certificates": [partner.certificate_pem()], "as2_security": "signed-encrypted"}),
    )
    .await;
}

/// Invoices booked, read with the admin token.
async fn invoices(h: &Harness) -> usize {
    let reply = Reply::send(h.app.client.get(h.app.url("/v1/invoices?limit=500")).bearer_auth(ADMIN)).await;
    reply.json()["items"].as_array().unwrap().len()
}

async fn attempts_of(h: &Harness, id: &str) -> Vec<serde_json::Value> {
    let reply = Reply::send(h.app.client.get(h.app.url(&format!("/v1/interchanges/{id}/deliveries")))).await;
    reply.json()["items"].as_array().unwrap().clone()
}

both_backends!(
    appended_ciphertext_blocks_teach_nothing,
    an_as2_gateway_gets_a_receipt_for_every_final_outcome,
    opaque_signed_data_under_authenticated_encryption_is_booked_once,
    partner_add_prints_what_the_gateway_must_configure,
    plain_edi_with_a_receipt_asked_is_answered_with_an_mdn,
    the_certificate_is_served_to_partners
);
