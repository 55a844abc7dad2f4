/**
 * The person's desktop, as a port: opening a file in their browser (the console's one-time
 * sign-in page, by path) and showing a notification — `xdg-open` / `open` / `start`, and
 * `notify-send` / `osascript` / a PowerShell toast. Whatever goes on a command line here any
 * local user can read (`ps`, /proc/<pid>/cmdline): a path and words about a payment, never a
 * token or a code; the scripts of macOS and Windows go on stdin. And whether there is a
 * desktop to bring anything to at all (`desktopSession`, pure).
 */
import { spawn, type SpawnOptions } from "node:child_process";

/** What the server may do on the person's desktop. */
export interface Desktop {
  /** Opens a file in the person's default browser, by path; rejects when no opener could start. */
  open(path: string): Promise<void>;
  /** Shows a notification; never rejects (a failure is logged, once per process). */
  notify(title: string, body: string): Promise<void>;
}

/** An SSH session: what opens or shows would land on the far machine's screen, or nowhere. */
const overSsh = (env: NodeJS.ProcessEnv) => Boolean(env.SSH_CONNECTION || env.SSH_CLIENT || env.SSH_TTY);

/**
 * Whether a person's desktop session is there to bring an approval to: on Linux and the BSDs
 * an X11 or Wayland display (`DISPLAY`, `WAYLAND_DISPLAY`; an SSH session that forwards X sets
 * `DISPLAY` to the person's own screen), on macOS and Windows the logged-in session unless the
 * process runs over SSH. Anything else (a container, a CI runner, a service): no.
 */
export function desktopSession(env: NodeJS.ProcessEnv, platform: NodeJS.Platform): boolean {
  if (platform === "darwin" || platform === "win32") return !overSsh(env);
  if (platform === "linux" || platform === "freebsd" || platform === "openbsd" || platform === "netbsd")
    return Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
  return false;
}

/**
 * The command that opens a file in the person's default browser (its handler for .html), by
 * path. Whatever is here is on a command line that any local user can read: a path, never a
 * secret.
 */
export function openerCommand(
  path: string,
  platform: NodeJS.Platform = process.platform,
): { command: string; args: string[]; options: SpawnOptions } {
  const options: SpawnOptions = { detached: true, stdio: "ignore" };
  if (platform === "darwin") return { command: "open", args: [path], options };
  if (platform === "win32") {
    // `start` takes its first quoted argument as a title; the quotes keep a path with spaces whole.
    return {
      command: "cmd",
      args: ["/c", `start "" "${path}"`],
      options: { ...options, windowsHide: true, windowsVerbatimArguments: true },
    };
  }
  return { command: "xdg-open", args: [path], options };
}

/** A string inside AppleScript's double quotes. */
const appleScriptString = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
/** A string inside PowerShell's single quotes. */
const powerShellString = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** PowerShell's own AppId: a toast needs a registered one to show. */
const POWERSHELL_APP_ID = "{1AC14E77-02E7-4E5D-B744-2EB1AE5198B7}\\WindowsPowerShell\\v1.0\\powershell.exe";

/**
 * The command that shows a notification: its arguments, and the script it reads on stdin
 * (macOS, Windows), so that the words stay off the command line where a shell could read them.
 */
export function notifierCommand(
  title: string,
  body: string,
  platform: NodeJS.Platform = process.platform,
): { command: string; args: string[]; stdin?: string } {
  if (platform === "darwin")
    return {
      command: "osascript",
      args: ["-"],
      stdin: `display notification ${appleScriptString(body)} with title ${appleScriptString(title)}\n`,
    };
  if (platform === "win32") {
    const script = [
      "$ErrorActionPreference = 'Stop'",
      "[Windows.UI.Notifications.ToastNotificationManager, Windows.UI.Notifications, ContentType = WindowsRuntime] > $null",
      "$xml = [Windows.UI.Notifications.ToastNotificationManager]::GetTemplateContent([Windows.UI.Notifications.ToastTemplateType]::ToastText02)",
      "$texts = $xml.GetElementsByTagName('text')",
      `$texts.Item(0).AppendChild($xml.CreateTextNode(${powerShellString(title)})) > $null`,
      `$texts.Item(1).AppendChild($xml.CreateTextNode(${powerShellString(body)})) > $null`,
      `[Windows.UI.Notifications.ToastNotificationManager]::CreateToastNotifier(${powerShellString(POWERSHELL_APP_ID)}).Show([Windows.UI.Notifications.ToastNotification]::new($xml))`,
      "",
    ].join("\n");
    return { command: "powershell.exe", args: ["-NoProfile", "-NonInteractive", "-Command", "-"], stdin: script };
  }
  return { command: "notify-send", args: ["--app-name=paid-actions-mcp", title, body] };
}

/** How long a notifier may take before it is left to finish on its own. */
const NOTIFY_WAIT_MS = 5_000;

/**
 * The desktop of the environment `env` (the server's own: its PATH finds the opener), on
 * `platform`. A failed notification is logged once; opening reports its failure to the caller.
 */
export function createDesktop(o: {
  env: NodeJS.ProcessEnv;
  platform: NodeJS.Platform;
  log: (line: string) => void;
}): Desktop {
  let notifyFailed = false;
  const failed = (why: string) => {
    if (notifyFailed) return;
    notifyFailed = true;
    o.log(`desktop: could not show a notification (${why}); the console's page is opened all the same`);
  };
  return {
    open: (path) =>
      new Promise<void>((resolve, reject) => {
        const { command, args, options } = openerCommand(path, o.platform);
        const child = spawn(command, args, { ...options, env: o.env });
        child.once("error", reject);
        child.once("spawn", () => {
          child.unref();
          resolve();
        });
      }),
    notify: (title, body) =>
      new Promise<void>((resolve) => {
        const { command, args, stdin } = notifierCommand(title, body, o.platform);
        const child = spawn(command, args, {
          env: o.env,
          stdio: [stdin === undefined ? "ignore" : "pipe", "ignore", "ignore"],
          windowsHide: true,
        });
        const timer = setTimeout(() => {
          child.unref();
          resolve();
        }, NOTIFY_WAIT_MS).unref();
        child.once("error", (e) => {
          clearTimeout(timer);
          failed(`${command}: ${e.message}`);
          resolve();
        });
        child.once("exit", (code) => {
          clearTimeout(timer);
          if (code !== 0) failed(`${command} exited with ${code}`);
          resolve();
        });
        if (stdin !== undefined) {
          child.stdin?.on("error", () => undefined);
          child.stdin?.end(stdin);
        }
      }),
  };
}
