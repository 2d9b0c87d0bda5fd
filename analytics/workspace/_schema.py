"""The workspace's SQLite schema as an ordered list of migrations.

Migration ``i`` (1-based) brings a database from version ``i - 1`` to ``i``. Never edit a migration
that has shipped: append a new one. ``PRAGMA user_version`` holds the version reached.
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
    # 1: everything the first release stores.
    """
    CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
    );
    -- A class of the workspace; imagenet_indices is a JSON list (empty when the class has none).
    CREATE TABLE classes (
        name             TEXT PRIMARY KEY,
        imagenet_indices TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE targets (
        id          TEXT PRIMARY KEY,
        class_name  TEXT NOT NULL REFERENCES classes(name),
        image_hash  TEXT NOT NULL,
        mask_hash   TEXT NOT NULL,
        height      INTEGER NOT NULL,
        width       INTEGER NOT NULL,
        origin      TEXT NOT NULL,
        package     TEXT NOT NULL DEFAULT '',
        licence     TEXT NOT NULL DEFAULT '',
        added       TEXT NOT NULL
    );
    CREATE TABLE backgrounds (
        id          TEXT PRIMARY KEY,
        image_hash  TEXT NOT NULL,
        height      INTEGER NOT NULL,
        width       INTEGER NOT NULL,
        origin      TEXT NOT NULL,
        crop        TEXT NOT NULL DEFAULT '',
        package     TEXT NOT NULL DEFAULT '',
        licence     TEXT NOT NULL DEFAULT '',
        added       TEXT NOT NULL
    );
    -- A registered model. spec is a JSON object (source, architecture, checkpoint, label space,
    -- preprocessing, embedding layer ...) owned by analytics.models.
    CREATE TABLE models (
        name        TEXT PRIMARY KEY,
        source      TEXT NOT NULL,
        spec        TEXT NOT NULL,
        added       TEXT NOT NULL
    );
    -- A named matrix of keyword scores over items (targets or backgrounds): arrays in the store.
    CREATE TABLE keyword_tables (
        name         TEXT PRIMARY KEY,
        backend      TEXT NOT NULL,
        item_kind    TEXT NOT NULL CHECK (item_kind IN ('target', 'background')),
        params       TEXT NOT NULL,
        ids_hash     TEXT NOT NULL,
        scores_hash  TEXT NOT NULL,
        present_hash TEXT NOT NULL,
        vocabulary   TEXT NOT NULL,
        created      TEXT NOT NULL
    );
    CREATE TABLE ontologies (
        id        TEXT PRIMARY KEY,
        params    TEXT NOT NULL,
        graph     TEXT NOT NULL,
        summary   TEXT NOT NULL,
        created   TEXT NOT NULL
    );
    CREATE TABLE suites (
        id        TEXT PRIMARY KEY,
        method    TEXT NOT NULL,
        n         INTEGER NOT NULL,
        seed      INTEGER NOT NULL,
        params    TEXT NOT NULL,
        created   TEXT NOT NULL
    );
    -- position 1..n; the original image of a target is position 0 and has no row here.
    CREATE TABLE suite_items (
        suite_id      TEXT NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
        target_id     TEXT NOT NULL REFERENCES targets(id),
        position      INTEGER NOT NULL,
        background_id TEXT NOT NULL REFERENCES backgrounds(id),
        keyword       TEXT NOT NULL DEFAULT '',
        level         INTEGER NOT NULL DEFAULT -1,
        distance      REAL,
        PRIMARY KEY (suite_id, target_id, position)
    );
    CREATE TABLE runs (
        id        TEXT PRIMARY KEY,
        model     TEXT NOT NULL REFERENCES models(name),
        suite_id  TEXT NOT NULL REFERENCES suites(id),
        status    TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
        device    TEXT NOT NULL DEFAULT '',
        summary   TEXT NOT NULL DEFAULT '{}',
        created   TEXT NOT NULL,
        finished  TEXT
    );
    -- One row per image of a run: position 0 = the original target image.
    CREATE TABLE run_images (
        run_id         TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        target_id      TEXT NOT NULL,
        position       INTEGER NOT NULL,
        predicted      TEXT NOT NULL,
        true_prob      REAL NOT NULL,
        max_prob       REAL NOT NULL,
        correct        INTEGER NOT NULL,
        emb_topk_mean  REAL NOT NULL,
        emb_max        REAL NOT NULL,
        emb_mean       REAL NOT NULL,
        distance       REAL,
        PRIMARY KEY (run_id, target_id, position)
    );
    -- Judgments keep their history: a changed judgment is a new row; the latest counts.
    CREATE TABLE judgments (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        annotator   TEXT NOT NULL,
        model       TEXT NOT NULL,
        run_id      TEXT,
        suite_id    TEXT,
        label       TEXT NOT NULL CHECK (label IN ('invariant', 'borderline', 'variant')),
        confidence  REAL,
        note        TEXT NOT NULL DEFAULT '',
        created     TEXT NOT NULL
    );
    CREATE INDEX judgments_by_model ON judgments(model, annotator, id);
    -- Results worth keeping between sessions, addressed by a key that names their inputs.
    CREATE TABLE cache (
        key      TEXT PRIMARY KEY,
        hash     TEXT NOT NULL,
        created  TEXT NOT NULL
    );
    """,
    # 2: suite items that failed the realism bar and fill a suite only because too few passed.
    """
    ALTER TABLE suite_items ADD COLUMN below_realism INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: class mappings beyond ImageNet indices (an IN-9 class or a custom output label); which
    # weights and class mappings a run used and which weights a judgment judged (stale results).
    """
    ALTER TABLE classes ADD COLUMN in9 TEXT NOT NULL DEFAULT '';
    ALTER TABLE classes ADD COLUMN label TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN model_key TEXT NOT NULL DEFAULT '';
    ALTER TABLE runs ADD COLUMN classes_key TEXT NOT NULL DEFAULT '';
    ALTER TABLE judgments ADD COLUMN model_key TEXT NOT NULL DEFAULT '';
    CREATE INDEX judgments_by_suite ON judgments(suite_id, annotator, model, id);
    """,
    # 4: team accounts (team mode): a password hash from a maintained library, a role, and the
    # failed-sign-in count and lock that stop password guessing.
    """
    CREATE TABLE users (
        name            TEXT PRIMARY KEY,
        role            TEXT NOT NULL CHECK (role IN ('admin', 'analyst', 'annotator', 'viewer')),
        password_hash   TEXT NOT NULL,
        disabled        INTEGER NOT NULL DEFAULT 0,
        failed_attempts INTEGER NOT NULL DEFAULT 0,
        locked_until    TEXT NOT NULL DEFAULT '',
        created         TEXT NOT NULL,
        updated         TEXT NOT NULL
    );
    """,
    # 5: team judging and background work. Assignments of a suite's models to annotators and, per
    # suite, how many judgments each model needs when everyone judges everything; consensus labels a
    # lead records (history kept, stored apart from raw judgments); jobs: long work run in a process
    # of its own, with progress, a cancel request and the result.
    """
    CREATE TABLE assignments (
        suite_id    TEXT NOT NULL REFERENCES suites(id) ON DELETE CASCADE,
        model       TEXT NOT NULL,
        annotator   TEXT NOT NULL,
        assigned_by TEXT NOT NULL DEFAULT '',
        created     TEXT NOT NULL,
        PRIMARY KEY (suite_id, model, annotator)
    );
    CREATE TABLE judging_plans (
        suite_id         TEXT PRIMARY KEY REFERENCES suites(id) ON DELETE CASCADE,
        everyone         INTEGER NOT NULL DEFAULT 1,
        judgments_wanted INTEGER NOT NULL CHECK (judgments_wanted >= 1),
        set_by           TEXT NOT NULL DEFAULT '',
        created          TEXT NOT NULL
    );
    CREATE TABLE consensus (
        id          INTEGER PRIMARY KEY AUTOINCREMENT,
        model       TEXT NOT NULL,
        suite_id    TEXT NOT NULL,
        model_key   TEXT NOT NULL DEFAULT '',
        label       TEXT NOT NULL CHECK (label IN ('invariant', 'borderline', 'variant')),
        reason      TEXT NOT NULL,
        adjudicator TEXT NOT NULL,
        created     TEXT NOT NULL
    );
    CREATE INDEX consensus_by_suite ON consensus(suite_id, model, id);
    CREATE TABLE jobs (
        id        TEXT PRIMARY KEY,
        kind      TEXT NOT NULL,
        params    TEXT NOT NULL,
        status    TEXT NOT NULL CHECK (status IN ('queued', 'running', 'cancelling', 'cancelled', 'done', 'failed')),
        done      INTEGER NOT NULL DEFAULT 0,
        total     INTEGER NOT NULL DEFAULT 0,
        message   TEXT NOT NULL DEFAULT '',
        result    TEXT NOT NULL DEFAULT '{}',
        pid       INTEGER,
        owner     TEXT NOT NULL DEFAULT '',
        created   TEXT NOT NULL,
        updated   TEXT NOT NULL
    );
    CREATE INDEX jobs_by_status ON jobs(status, created);
    """,
    # 6: per finished run and matrix settings, quantiles of each signal's matrix cells (an array in
    # the store, one row per signal in the order of the JSON list ``signals``), computed by the run's
    # own job; a suite's colour scale combines them instead of computing every run's matrices.
    # ``finished`` is the run's finishing time they were computed for (a redone run recomputes).
    """
    CREATE TABLE run_cell_quantiles (
        run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        settings_id TEXT NOT NULL,
        finished    TEXT NOT NULL,
        signals     TEXT NOT NULL,
        hash        TEXT NOT NULL,
        PRIMARY KEY (run_id, settings_id)
    );
    """,
    # 7: the authors' statistics of the last convolutional map per run image (analytics.models.conv_map):
    # NULL for rows stored before them and for models without such a map (TorchScript, transformers).
    """
    ALTER TABLE run_images ADD COLUMN conv_max REAL;
    ALTER TABLE run_images ADD COLUMN conv_max_mean REAL;
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
