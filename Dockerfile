FROM python:3.11-slim
WORKDIR /app
# CPU-only torch first: an unpinned torch would pull a multi-GB CUDA build.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
COPY pyproject.toml README.md ./
# The design card's folders; they install under one namespace (tempr.agents, tempr.store, ...).
COPY tempr tempr
COPY streams streams
COPY agents agents
COPY recall_api recall_api
COPY schemas schemas
COPY store store
COPY inference inference
COPY migrations migrations
RUN pip install --no-cache-dir ".[server]"
USER nobody
