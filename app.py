"""Start kb's web app: the chat UI at /, the JSON API at /api, the docs widget at /widget.js.

python app.py [--host 127.0.0.1] [--port 7860]   (or KB_HOST / KB_PORT; KB_API_TOKEN for auth)
"""

from __future__ import annotations

import argparse
import sys

from kb.errors import KbError
from kb.settings import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port (default 7860)")
    parser.add_argument("--no-llm", action="store_true", help="composed answers only")
    args = parser.parse_args(argv)
    overrides = {"host": args.host, "port": args.port}
    if args.no_llm:
        overrides["llm_backend"] = "none"
    settings = Settings.from_env(**overrides)
    from assistant.webapp import serve

    try:
        serve(settings)
    except KbError as exc:
        print(f"kb: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
