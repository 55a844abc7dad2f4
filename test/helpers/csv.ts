/**
 * An RFC 4180 reader for the tests that parse an export back: quoted fields (quotes doubled,
 * commas and line breaks inside), CRLF between records. Throws on anything else, so a test
 * fails on a file a spreadsheet would misread.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let i = 0;
  const field = (): string => {
    if (text[i] !== '"') {
      let end = i;
      while (end < text.length && text[end] !== "," && text[end] !== "\r" && text[end] !== "\n") end++;
      const value = text.slice(i, end);
      if (value.includes('"')) throw new Error(`a quote inside an unquoted field at ${i}`);
      i = end;
      return value;
    }
    let value = "";
    i++;
    for (;;) {
      if (i >= text.length) throw new Error("an unterminated quoted field");
      if (text[i] === '"') {
        if (text[i + 1] === '"') {
          value += '"';
          i += 2;
          continue;
        }
        i++;
        return value;
      }
      value += text[i++];
    }
  };
  while (i < text.length) {
    row.push(field());
    if (text[i] === ",") {
      i++;
      continue;
    }
    if (text.slice(i, i + 2) !== "\r\n") throw new Error(`a record not ended by CRLF at ${i}`);
    i += 2;
    rows.push(row);
    row = [];
  }
  if (row.length > 0) throw new Error("the last record has no CRLF");
  return rows;
}
