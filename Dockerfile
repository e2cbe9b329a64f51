# raptorgrid service image: API, workers, migrations and the reconciler share it.
#   docker compose build && docker compose up --scale worker=4
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    RAPTORGRID_DATA_DIR=/data

WORKDIR /app

# The sources, then an editable install: the service finds its Alembic scripts at
# platform/raptorgrid/../../migrations, which only a source tree has.
COPY pyproject.toml README.md* ./
COPY models ./models
COPY solvers ./solvers
COPY workers ./workers
COPY platform ./platform
COPY migrations ./migrations
RUN pip install --upgrade pip setuptools wheel \
    && pip install -e '.[s3]'

# An unprivileged user owning /data, so a named volume mounted there starts writable.
RUN useradd --create-home --uid 10001 raptorgrid \
    && mkdir -p /data \
    && chown raptorgrid:raptorgrid /data
USER raptorgrid
VOLUME ["/data"]

EXPOSE 8000
CMD ["raptorgrid", "--help"]
