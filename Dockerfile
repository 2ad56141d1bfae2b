# hookgate: `docker build -t hookgate . && docker run -p 8787:8787 -e OPENAI_API_KEY -e HOOKGATE_CLIENT_KEY hookgate`
# HOOKGATE_CLIENT_KEY (e.g. `export HOOKGATE_CLIENT_KEY=$(openssl rand -hex 24)`) is the key
# agents send as their API key. The image listens on 0.0.0.0, and hookgate refuses to serve
# anonymous callers from the network: without it (or keys.required / server.allow_anonymous
# in your own config) the container exits at once with a message saying so.
# The install step is the one CI uses (pip install of this project), without dev tools.
FROM python:3.11-slim

RUN useradd --create-home --uid 10001 hookgate \
 && mkdir /data && chown hookgate /data
WORKDIR /app
COPY pyproject.toml README.md ./
COPY proxy ./proxy
COPY policies ./policies
RUN pip install --no-cache-dir '.[speed,pii]'

USER hookgate
ENV HOOKGATE_CONFIG=/app/policies/default.yaml \
    HOOKGATE_STORE=sqlite:////data/hookgate.db
VOLUME /data
EXPOSE 8787
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8787/healthz', timeout=2)"
# SIGTERM drains in-flight requests (server.shutdown_timeout_s), then exits.
STOPSIGNAL SIGTERM
CMD ["hookgate", "serve", "--host", "0.0.0.0"]
