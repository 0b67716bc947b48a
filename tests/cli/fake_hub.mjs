// fake_hub.mjs — a stand-in for the Hugging Face hub on 127.0.0.1, for
// tests/cli/pull.sh: the URL layout, headers and redirects `inferno pull`
// relies on, served from a folder of repositories.
//
//   node tests/cli/fake_hub.mjs ROOT STATE_DIR
//
// ROOT/ORG/NAME/... are the repositories' files (any depth). Files ending in
// .gguf or .safetensors are "LFS" files: the HEAD of their resolve URL
// answers 302 to /cdn/<sha256> on a second port (the CDN: another origin)
// with X-Linked-Etag (the sha256) and
// X-Linked-Size; other files answer 200 with ETag (their git blob id) and
// Content-Length. Every answer carries X-Repo-Commit. /cdn/ honours
// "Range: bytes=N-" (206 with Content-Range). Dot files in a repository
// folder steer it and are not listed:
//   .token    the bearer token the repository needs (401 without it)
//   .drop     file names (one a line) whose first /cdn/ GET is cut after
//             half of its bytes (the connection destroyed)
//   .corrupt  file names whose advertised sha256 is not their bytes'
// API: GET /api/models/ORG/NAME/revision/REV -> {id, sha, siblings:[{rfilename}]};
// REV is main or the commit (sha1 of "commit:ORG/NAME"), else 404.
// Unknown repositories answer 404 with X-Error-Code: RepoNotFound.
// Writes STATE_DIR/port (the hub's) once both listen, and appends one JSON
// line per request to STATE_DIR/requests.log: {method, path, range, auth}.
import { createHash } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

const [root, stateDir] = process.argv.slice(2);
if (!root || !stateDir) {
    console.error("usage: node fake_hub.mjs ROOT STATE_DIR");
    process.exit(2);
}
const logPath = path.join(stateDir, "requests.log");

const sha256 = (data) => createHash("sha256").update(data).digest("hex");
const sha1 = (data) => createHash("sha1").update(data).digest("hex");
const gitBlobId = (data) => sha1(Buffer.concat([Buffer.from(`blob ${data.length}\0`), data]));
const isLfs = (name) => name.endsWith(".gguf") || name.endsWith(".safetensors");

function readLines(file) {
    try {
        return fs.readFileSync(file, "utf8").split("\n").map((s) => s.trim()).filter(Boolean);
    } catch {
        return [];
    }
}

// The repositories, read once at start: id -> {commit, token, files: name -> {data, sha, etag, drop}}
const repos = new Map();
const cdn = new Map(); // advertised sha256 -> {data, repo, name}
for (const org of fs.readdirSync(root)) {
    for (const name of fs.readdirSync(path.join(root, org))) {
        const id = `${org}/${name}`;
        const dir = path.join(root, org, name);
        const token = readLines(path.join(dir, ".token"))[0] || null;
        const drop = new Set(readLines(path.join(dir, ".drop")));
        const corrupt = new Set(readLines(path.join(dir, ".corrupt")));
        const files = new Map();
        const walk = (rel) => {
            for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
                const relName = rel ? `${rel}/${entry.name}` : entry.name;
                if (!rel && entry.name.startsWith(".")) continue;
                if (entry.isDirectory()) walk(relName);
                else {
                    const data = fs.readFileSync(path.join(dir, relName));
                    const sha = corrupt.has(relName) ? sha256(Buffer.concat([data, Buffer.from("corrupt")])) : sha256(data);
                    files.set(relName, { data, sha, etag: gitBlobId(data), drop: drop.has(relName) });
                    if (isLfs(relName)) cdn.set(sha, files.get(relName));
                }
            }
        };
        walk("");
        repos.set(id, { commit: sha1(`commit:${id}`), token, files });
    }
}

function authorized(repo, req) {
    return !repo.token || req.headers.authorization === `Bearer ${repo.token}`;
}

function hubError(res, status, code, message) {
    res.writeHead(status, {
        "Content-Type": "application/json",
        "X-Error-Code": code,
        "X-Error-Message": message,
    });
    res.end(JSON.stringify({ error: message }));
}

function serveRevision(res, req, id, rev) {
    const repo = repos.get(id);
    if (!repo) return hubError(res, 404, "RepoNotFound", "Repository not found");
    if (!authorized(repo, req)) return hubError(res, 401, "GatedRepo", `Access to model ${id} is restricted.`);
    if (rev !== "main" && rev !== repo.commit) return hubError(res, 404, "RevisionNotFound", `Invalid rev id: ${rev}`);
    const body = JSON.stringify({
        _id: "0",
        id,
        sha: repo.commit,
        siblings: [...repo.files.keys()].map((rfilename) => ({ rfilename })),
    });
    res.writeHead(200, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
}

function serveResolve(res, req, id, rev, name) {
    const repo = repos.get(id);
    if (!repo) return hubError(res, 404, "RepoNotFound", "Repository not found");
    if (!authorized(repo, req)) return hubError(res, 401, "GatedRepo", `Access to model ${id} is restricted.`);
    if (rev !== "main" && rev !== repo.commit) return hubError(res, 404, "RevisionNotFound", `Invalid rev id: ${rev}`);
    const file = repo.files.get(name);
    if (!file) return hubError(res, 404, "EntryNotFound", `${name} does not exist`);
    if (isLfs(name)) {
        res.writeHead(302, {
            Location: `http://127.0.0.1:${cdnServer.address().port}/cdn/${file.sha}?name=${encodeURIComponent(name)}`,
            "X-Repo-Commit": repo.commit,
            "X-Linked-Etag": `"${file.sha}"`,
            "X-Linked-Size": String(file.data.length),
            ETag: `"${file.etag}"`,
            "Content-Length": "0",
        });
        return res.end();
    }
    res.writeHead(200, {
        "X-Repo-Commit": repo.commit,
        ETag: `"${file.etag}"`,
        "Content-Length": String(file.data.length),
        "Accept-Ranges": "bytes",
    });
    res.end(req.method === "HEAD" ? undefined : file.data);
}

function serveCdn(res, req, sha) {
    const file = cdn.get(sha);
    if (!file) return hubError(res, 404, "EntryNotFound", "no such blob");
    const size = file.data.length;
    let start = 0;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range || "");
    if (range) {
        start = Number(range[1]);
        if (start >= size) {
            res.writeHead(416, { "Content-Range": `bytes */${size}` });
            return res.end();
        }
        res.writeHead(206, {
            "Content-Range": `bytes ${start}-${size - 1}/${size}`,
            "Content-Length": String(size - start),
            "Accept-Ranges": "bytes",
        });
    } else {
        res.writeHead(200, { "Content-Length": String(size), "Accept-Ranges": "bytes" });
    }
    if (req.method === "HEAD") return res.end();
    if (file.drop && !range) {
        // the first download is cut off halfway, the connection dropped
        file.drop = false;
        const half = Math.floor(size / 2);
        res.write(file.data.subarray(0, half), () => setTimeout(() => req.socket.destroy(), 20));
        return;
    }
    res.end(file.data.subarray(start));
}

function route(req, res) {
    const url = new URL(req.url, "http://x");
    fs.appendFileSync(
        logPath,
        JSON.stringify({ method: req.method, path: url.pathname, range: req.headers.range || null,
                         auth: req.headers.authorization || null }) + "\n",
    );
    const parts = url.pathname.split("/").map(decodeURIComponent);
    // ["", "api", "models", ORG, NAME, "revision", REV]
    if (req.method === "GET" && parts[1] === "api" && parts[2] === "models" && parts[5] === "revision" && parts.length === 7)
        return serveRevision(res, req, `${parts[3]}/${parts[4]}`, parts[6]);
    // ["", ORG, NAME, "resolve", REV, ...file]
    if ((req.method === "GET" || req.method === "HEAD") && parts[3] === "resolve" && parts.length >= 6)
        return serveResolve(res, req, `${parts[1]}/${parts[2]}`, parts[4], parts.slice(5).join("/"));
    if ((req.method === "GET" || req.method === "HEAD") && parts[1] === "cdn" && parts.length === 3)
        return serveCdn(res, req, parts[2]);
    hubError(res, 404, "NotFound", `no route for ${req.method} ${url.pathname}`);
}

// the hub, and the "CDN" on a port of its own (another origin, as the real
// CDN is another host: the token must not go there)
const server = http.createServer(route);
const cdnServer = http.createServer(route);
cdnServer.listen(0, "127.0.0.1", () =>
    server.listen(0, "127.0.0.1", () => {
        fs.writeFileSync(path.join(stateDir, "port.tmp"), String(server.address().port));
        fs.renameSync(path.join(stateDir, "port.tmp"), path.join(stateDir, "port"));
    }),
);
// the test script kills us; never outlive it by much
setTimeout(() => process.exit(0), 120_000).unref();
for (const sig of ["SIGTERM", "SIGINT"]) process.on(sig, () => process.exit(0));
