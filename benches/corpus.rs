//! Large valid interchanges for the benchmarks: X12 810s and EDIFACT INVOICs of a requested size,
//! generated rather than committed. Each invoice has three lines, like typical replenishment invoices,
//! and states the total its lines make (an invoice that does not reconcile is answered with a warning).

/// An X12 004010 interchange of 810s, one group, at least `target` bytes.
pub fn x12_810(target: usize) -> Vec<u8> {
    let mut sets = Vec::new();
    let mut size = 0;
    while size < target {
        let n = sets.len() + 1;
        let set = format!(
            "ST*810*{n:04}~\nBIG*20260317*INV-{n}*20260301*PO-{n}~\nCUR*SE*USD~\nN1*SE*ACME SUPPLY CO*92*ACME-001~\n\
             N1*BY*BUYERCO RETAIL*92*BUY-777~\nIT1*1*500*EA*12.50**VP*WIDGET-A100~\nPID*F****BLUE WIDGET~\n\
             IT1*2*200*EA*8.75**VP*BOLT-M6X20~\nPID*F****HEX BOLT M6X20~\nIT1*3*3*EA*199.99**VP*SKU-9~\n\
             PID*F****STAND MIXER~\nTDS*859997~\nCTT*3~\nSE*14*{n:04}~\n"
        );
        size += set.len();
        sets.push(set);
    }
    let mut out = String::from(
        "ISA*00*          *00*          *ZZ*ACMESUPPLY     *ZZ*BUYERCO        *260317*1015*U*00401*000000001*0*P*>~\n\
         GS*IN*ACMESUPPLY*BUYERCO*20260317*1015*1*X*004010~\n",
    );
    out.extend(sets.iter().map(String::as_str));
    out.push_str(&format!("GE*{}*1~\nIEA*1*000000001~\n", sets.len()));
    out.into_bytes()
}

/// An EDIFACT D96A interchange of INVOIC messages, at least `target` bytes.
pub fn edifact_invoic(target: usize) -> Vec<u8> {
    let mut messages = Vec::new();
    let mut size = 0;
    while size < target {
        let n = messages.len() + 1;
        let message = format!(
            "UNH+{n}+INVOIC:D:96A:UN:EAN008'\nBGM+380+RE-{n}+9'\nDTM+137:20260317:102'\nRFF+ON:PO-{n}'\n\
             NAD+SU+4000001000005::9++Mueller ?+ Soehne GmbH'\nNAD+BY+4000002000004::9++O?'Brien Handel'\n\
             CUX+2:EUR:4'\nLIN+1++4012345000009:EN'\nIMD+F++:::Rohstoff'\nQTY+47:10'\nMOA+203:32.50'\n\
             PRI+AAA:3.25'\nLIN+2++4012345000016:EN'\nIMD+F++:::Verpackung'\nQTY+47:100'\nMOA+203:40.00'\n\
             PRI+AAA:0.40'\nUNS+S'\nMOA+79:72.50'\nMOA+125:72.50'\nMOA+124:13.78'\nMOA+77:86.28'\n\
             TAX+7+VAT+++:::19'\nUNT+24+{n}'\n"
        );
        size += message.len();
        messages.push(message);
    }
    let mut out = String::from("UNA:+.? 'UNB+UNOC:3+4000001000005:14+4000002000004:14+260317:1015+1'\n");
    out.extend(messages.iter().map(String::as_str));
    out.push_str(&format!("UNZ+{}+1'\n", messages.len()));
    out.into_bytes()
}
