"""python3 -m loom.viz [trace.json] [-o page.html] [--serve] | --replay A.txt [B.txt]"""
import argparse
import functools
import http.server
import os
import sys

from .page import load_trace, write_page, write_replay_page


def _serve(page, port):
    directory, name = os.path.split(os.path.abspath(page))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=directory)
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        print(f"loom.viz: serving http://127.0.0.1:{server.server_address[1]}/{name} (Ctrl-C stops)")
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m loom.viz",
                                 description="Writes a page showing a LOOM_VIZ trace or process-replay snapshots.")
    ap.add_argument("trace", nargs="?", default="loom_viz.json", help="the trace (default: loom_viz.json)")
    ap.add_argument("-o", "--output", help="the page (default: the trace's name with .html)")
    ap.add_argument("--replay", nargs="+", metavar="SNAPSHOT",
                    help="show one process-replay snapshot, or two side by side with their differences")
    ap.add_argument("--serve", action="store_true", help="serve the page on 127.0.0.1 after writing it")
    ap.add_argument("--port", type=int, default=0, help="the port to serve on (default: any free one)")
    ap.add_argument("--max-nodes", type=int, default=6000,
                    help="graphs with more nodes are listed but not laid out (default 6000)")
    args = ap.parse_args(argv)
    try:
        if args.replay:
            if len(args.replay) > 2:
                ap.error("--replay takes one snapshot, or two to compare")
            out = args.output or os.path.splitext(args.replay[-1])[0] + ".html"
            write_replay_page(args.replay, out)
        else:
            out = args.output or os.path.splitext(args.trace)[0] + ".html"
            write_page(load_trace(args.trace), out, max_nodes=args.max_nodes)
    except (OSError, ValueError, RuntimeError) as e:
        print(f"loom.viz: {e}", file=sys.stderr)
        return 1
    print(f"loom.viz: wrote {out} (open file://{os.path.abspath(out)})")
    if args.serve:
        _serve(out, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
