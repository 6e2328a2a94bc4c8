import { DEMO_ACCOUNTS } from '../service/demo-seed.js';
import type { LocalService } from '../service/local-service.js';
import { serve } from './serve.js';

const DEMO_PORT = 8443;

/**
 * `npm start`: the local service with the demo seed on a fixed port, and a short guide on the
 * terminal. (The supervisor and its demo bot join this once they exist.)
 */
export async function demo(args: string[]): Promise<void> {
  if (args.some((arg) => arg.startsWith('--port'))) return serve(args, printGuide);
  try {
    await serve(['--port', String(DEMO_PORT), ...args], printGuide);
  } catch (error) {
    // Another program has the usual port: a free one does as well for a demo.
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    await serve(['--port', '0', ...args], printGuide);
  }
}

function printGuide(service: LocalService): void {
  const accounts = Object.values(DEMO_ACCOUNTS)
    .map((a) => `    ${a.email.padEnd(20)} ${a.password.padEnd(12)} ${a.role}`)
    .join('\n');
  process.stdout.write(`
groupwire local service is running (demo seed)

  base URL     ${service.baseUrl}
  CA file      ${service.caFile ?? '(your own certificate)'}
  admin token  ${service.adminToken}

  Demo accounts (group "demo"; chats "general" and "random" open, "archive" closed):
${accounts}

  Try it:
    curl --cacert ${service.caFile} -c /tmp/gw.cookies -d email=bob@example.com -d password=bob-demo ${service.baseUrl}/api/v1/login
    curl --cacert ${service.caFile} -b /tmp/gw.cookies '${service.baseUrl}/api/v1/getchats?group_name=demo'

  Press Ctrl-C to stop.
`);
}
