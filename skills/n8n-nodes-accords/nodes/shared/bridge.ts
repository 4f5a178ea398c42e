// One JSON-RPC tools/call to the accords-mcp HTTP bridge: a stateless POST
// answered with a plain JSON body (Accept: application/json).
import type { IDataObject, IExecuteFunctions, IHttpRequestOptions, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

/** The envelope every accords-mcp tool answers with. */
export interface Envelope {
	ok: boolean;
	data?: IDataObject;
	error?: { code: string; category?: string; message: string; retryable?: boolean; details?: IDataObject };
	meta?: IDataObject;
}

/** A tool's envelope and the call id of its own receipt. */
export interface ToolAnswer {
	envelope: Envelope;
	callId?: string;
}

export async function callTool(
	ctx: IExecuteFunctions,
	itemIndex: number,
	name: string,
	args: IDataObject,
): Promise<ToolAnswer> {
	const creds = await ctx.getCredentials('accordsApi', itemIndex);
	const options: IHttpRequestOptions = {
		method: 'POST',
		url: String(creds.bridgeUrl),
		headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
		body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
		json: true,
	};
	let reply: IDataObject;
	try {
		reply = (await ctx.helpers.httpRequestWithAuthentication.call(ctx, 'accordsApi', options)) as IDataObject;
	} catch (error) {
		throw new NodeApiError(ctx.getNode(), error as JsonObject, { itemIndex });
	}
	const rpcError = reply.error as IDataObject | undefined;
	if (rpcError) {
		throw new NodeOperationError(ctx.getNode(), `${name}: JSON-RPC error ${rpcError.code}: ${rpcError.message}`, {
			itemIndex,
		});
	}
	const result = reply.result as IDataObject | undefined;
	const envelope = result?.structuredContent as Envelope | undefined;
	if (!envelope || typeof envelope.ok !== 'boolean') {
		throw new NodeOperationError(ctx.getNode(), `${name}: the bridge answered no tool envelope`, { itemIndex });
	}
	const meta = result?._meta as IDataObject | undefined;
	const callId = typeof meta?.['accords/call_id'] === 'string' ? (meta['accords/call_id'] as string) : undefined;
	return { envelope, callId };
}

/** toolError is a failed envelope as a node error naming the code. */
export function toolError(ctx: IExecuteFunctions, itemIndex: number, name: string, env: Envelope): NodeOperationError {
	const e = env.error;
	return new NodeOperationError(ctx.getNode(), `${name}: ${e?.code ?? 'error'}: ${e?.message ?? 'failed'}`, {
		itemIndex,
		description: e?.details ? JSON.stringify(e.details) : undefined,
	});
}
