#!/usr/bin/env bash
# Makes sure the servers the shared-store tests talk to are up on loopback:
# Redis on 127.0.0.1:6379 and PostgreSQL on 127.0.0.1:5432. Starts them when
# they are installed but stopped; fails (never skips) when they cannot be reached.
set -uo pipefail

redis_url_host=127.0.0.1
redis_port=${PORTCULLIS_REDIS_PORT:-6379}
pg_port=${PORTCULLIS_PG_PORT:-5432}

reachable() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_for() {
  local host=$1 port=$2
  for _ in $(seq 1 50); do
    reachable "$host" "$port" && return 0
    sleep 0.2
  done
  return 1
}

if ! reachable "$redis_url_host" "$redis_port"; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "starting redis-server on $redis_url_host:$redis_port"
    mkdir -p /tmp/portcullis-redis
    redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no \
      --dir /tmp/portcullis-redis --logfile /tmp/portcullis-redis/redis.log >/dev/null
  fi
  wait_for "$redis_url_host" "$redis_port" || { echo "Redis is not reachable on $redis_url_host:$redis_port" >&2; exit 1; }
fi

if ! reachable 127.0.0.1 "$pg_port"; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL on 127.0.0.1:$pg_port"
    for version in $(ls /etc/postgresql); do
      pg_ctlcluster --skip-systemctl-redirect "$version" main start >/dev/null 2>&1 || true
    done
  fi
  wait_for 127.0.0.1 "$pg_port" || { echo "PostgreSQL is not reachable on 127.0.0.1:$pg_port" >&2; exit 1; }
fi

echo "services: redis 127.0.0.1:$redis_port, postgresql 127.0.0.1:$pg_port reachable"
