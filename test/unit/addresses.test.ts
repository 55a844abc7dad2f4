/**
 * IP addresses as destinations (src/domain/addresses.ts) as a table over resolved addresses:
 * private, loopback, link-local, cloud metadata, carrier-grade NAT, IPv4 inside IPv6 (mapped,
 * NAT64, 6to4) and public ones. Pure: the rules for addresses beyond this machine are tested
 * here, never by sending traffic to them.
 */
import { describe, expect, it } from "vitest";
import { classifyAddress, isLoopback, isLoopbackName, nonPublicReason } from "../../src/domain/addresses.js";

describe("classifyAddress", () => {
  it.each([
    ["8.8.8.8"],
    ["93.184.216.34"],
    ["1.1.1.1"],
    ["172.32.0.1"],
    ["100.128.0.1"],
    ["2606:4700::1111"],
    ["2a00:1450:4001::200e"],
    ["::ffff:8.8.8.8"],
    ["64:ff9b::808:808"],
    ["2002:808:808::1"],
  ])("%s is public", (ip) => {
    expect(classifyAddress(ip)).toEqual({ public: true });
  });

  it.each([
    ["127.0.0.1", "loopback", /^loopback$/],
    ["127.0.0.2", "loopback", /^loopback$/],
    ["::1", "loopback", /^loopback$/],
    ["::ffff:127.0.0.1", "loopback", /loopback \(IPv4 127\.0\.0\.1 mapped into IPv6\)/],
    ["::ffff:7f00:1", "loopback", /loopback \(IPv4 127\.0\.0\.1 mapped into IPv6\)/],
    ["0.0.0.0", "unspecified", /unspecified/],
    ["::", "unspecified", /unspecified/],
    ["10.0.0.1", "private", /^private$/],
    ["172.16.5.4", "private", /^private$/],
    ["192.168.1.1", "private", /^private$/],
    ["fd00::1", "private", /unique local/],
    ["::ffff:a00:1", "private", /private \(IPv4 10\.0\.0\.1 mapped into IPv6\)/],
    ["64:ff9b::a00:1", "private", /private \(IPv4 10\.0\.0\.1 through NAT64\)/],
    ["64:ff9b::7f00:1", "loopback", /through NAT64/],
    ["2002:c0a8:101::1", "private", /private \(IPv4 192\.168\.1\.1 through 6to4\)/],
    ["100.64.0.1", "private", /carrier-grade NAT/],
    ["100.127.255.254", "private", /carrier-grade NAT/],
    ["169.254.1.1", "link-local", /^link-local$/],
    ["fe80::1", "link-local", /link-local/],
    ["fe80::1%eth0", "link-local", /link-local/],
    ["169.254.169.254", "metadata", /metadata.*link-local/],
    ["169.254.170.2", "metadata", /metadata/],
    ["100.100.100.200", "metadata", /metadata.*carrier-grade NAT/],
    ["fd00:ec2::254", "metadata", /metadata.*unique local/],
    ["::ffff:169.254.169.254", "metadata", /metadata.*mapped into IPv6/],
    ["::ffff:a9fe:a9fe", "metadata", /metadata/],
    ["64:ff9b::a9fe:a9fe", "metadata", /metadata.*NAT64/],
    ["224.0.0.1", "special", /multicast/],
    ["255.255.255.255", "special", /reserved/],
    ["192.0.2.1", "special", /documentation/],
    ["2001:db8::1", "special", /documentation/],
    ["4000::1", "special", /reserved/],
    ["not-an-ip", "invalid", /unparseable/],
    ["0x7f.1", "invalid", /unparseable/],
    ["2130706433", "invalid", /unparseable/],
  ])("%s is %s", (ip, kind, reason) => {
    const c = classifyAddress(ip);
    expect(c).toMatchObject({ public: false, kind });
    if (!c.public) expect(c.reason).toMatch(reason);
  });

  it("nonPublicReason, the webhook guard's rule, does not single out metadata endpoints", () => {
    expect(nonPublicReason("169.254.169.254")).toBe("link-local");
    expect(nonPublicReason("8.8.8.8")).toBeUndefined();
  });

  it.each([
    ["127.0.0.1", true],
    ["::1", true],
    ["::ffff:127.0.0.9", true],
    ["10.0.0.1", false],
    ["0.0.0.0", false],
  ])("isLoopback(%s) is %s", (ip, expected) => {
    expect(isLoopback(ip)).toBe(expected);
  });

  it.each([
    ["localhost", true],
    ["LOCALHOST.", true],
    ["x.localhost", true],
    ["localhost.example", false],
    ["mylocalhost", false],
  ])("isLoopbackName(%s) is %s", (name, expected) => {
    expect(isLoopbackName(name)).toBe(expected);
  });
});
