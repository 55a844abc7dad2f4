/**
 * The CSV the exports write (src/commands/csv.ts): RFC 4180 quoting, a header row, CRLF, and
 * formula-injection safety, checked by parsing the file back.
 */
import { describe, expect, it } from "vitest";
import { csvField, toCsv } from "../../src/commands/csv.js";
import { parseCsv } from "../helpers/csv.js";

describe("CSV for the books", () => {
  it("quotes what needs quoting and reads back the same", () => {
    const rows = [
      ["plain", "with, comma", 'with "quotes"', "two\r\nlines", "one\nline", ""],
      ["0.288", "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", "5xTx", "completed", "passkey laptop", "x"],
    ];
    const text = toCsv(["a", "b", "c", "d", "e", "f"], rows);
    expect(text.endsWith("\r\n")).toBe(true);
    expect(parseCsv(text)).toEqual([["a", "b", "c", "d", "e", "f"], ...rows]);
  });

  it("prefixes a cell a spreadsheet would run as a formula", () => {
    const table: Array<[string, string]> = [
      ['=HYPERLINK("http://evil","x")', '\'=HYPERLINK("http://evil","x")'],
      ["+1+1", "'+1+1"],
      ["-2+3", "'-2+3"],
      ["@SUM(A1)", "'@SUM(A1)"],
      ["\tcmd", "'\tcmd"],
      ["\rcmd", "'\rcmd"],
      ["1-2", "1-2"],
      ["a=b", "a=b"],
    ];
    for (const [value, read] of table) {
      expect(parseCsv(toCsv(["v"], [[value]]))[1]).toEqual([read]);
      expect(csvField(value).startsWith("'") || csvField(value).startsWith("\"'") || csvField(value) === value).toBe(
        true,
      );
    }
  });
});
