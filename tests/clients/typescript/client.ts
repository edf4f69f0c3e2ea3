// A TypeScript client made by openapi-typescript (types from the served document) and openapi-fetch,
// used as their READMEs show, compiled with tsc under `strict` and run with node: it posts an X12 810
// and an EDIFACT INVOIC with their own media types (201, then 200, then `Prefer: return=minimal`),
// reads each acknowledgement and lists the invoices. No cast anywhere: the body goes through an
// identity serializer (openapi-fetch JSON-quotes a string otherwise), and the answers (JSON, or
// the acknowledgement as a string) are told apart by their type and fields. Run by typescript_client.py with the server's address and the fixtures'
// directory; prints one line per check and a closing `N passed, N failed`.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

const [address, fixtures] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl: `http://${address}` });
let passed = 0;
let failed = 0;

function check(name: string, condition: boolean, detail: unknown): void {
  if (condition) {
    passed += 1;
    console.log(`ok   ${name}`);
  } else {
    failed += 1;
    console.log(`FAIL ${name}: ${JSON.stringify(detail)}`);
  }
}

type MediaType = "application/edi-x12" | "application/edifact";
const deliveries: { file: string; mediaType: MediaType; invoice: string; total: string; ack: string }[] = [
  { file: "x12/810-single.edi", mediaType: "application/edi-x12", invoice: "INV-1042", total: "8000.00", ack: "ST*997*" },
  { file: "edifact/invoic-d96a.edi", mediaType: "application/edifact", invoice: "RE-2026-0042", total: "86.28", ack: "CONTRL:D:3:UN" },
];

function post(body: string, mediaType: MediaType, prefer?: string) {
  return client.POST("/v1/interchanges", {
    body,
    bodySerializer: (raw) => raw,
    headers: { "Content-Type": mediaType },
    params: { header: prefer === undefined ? {} : { Prefer: prefer } },
  });
}

async function main(): Promise<number> {
  for (const delivery of deliveries) {
    const body = readFileSync(join(fixtures, delivery.file), "latin1");
    let id = "";
    for (const expected of [201, 200]) {
      const { data, response } = await post(body, delivery.mediaType);
      check(`${delivery.file} posted as ${delivery.mediaType}: ${expected}`, response.status === expected, response.status);
      if (typeof data === "object" && "invoices" in data) {
        const invoice = data.invoices[0];
        check(
          `${delivery.file} answer read as the whole interchange`,
          data.invoices.length === 1 && invoice.number === delivery.invoice && invoice.total === delivery.total,
          data.invoices,
        );
        id = data.id;
      } else {
        check(`${delivery.file} answer read as the whole interchange`, false, data);
      }
    }
    const minimal = await post(body, delivery.mediaType, "return=minimal");
    const data = minimal.data;
    check(
      `${delivery.file} minimal answer read as a MinimalInterchange`,
      minimal.response.status === 200 && typeof data === "object" && "invoice_count" in data && data.invoice_count === 1 && data.id === id,
      data,
    );
    const ack = await client.GET("/v1/interchanges/{id}/ack", { params: { path: { id } }, parseAs: "text" });
    check(
      `${delivery.file} acknowledgement read: ${delivery.ack}`,
      ack.response.status === 200 && typeof ack.data === "string" && ack.data.includes(delivery.ack),
      ack.data,
    );
  }
  const listed = await client.GET("/v1/invoices", { params: { query: { limit: 10 } } });
  const numbers = (listed.data?.items ?? []).map((invoice) => invoice.number).sort();
  check("the client lists the two invoices", numbers.join(",") === "INV-1042,RE-2026-0042", listed.data);
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.log(`FAIL the client stopped: ${String(error)}`);
    process.exit(1);
  },
);
