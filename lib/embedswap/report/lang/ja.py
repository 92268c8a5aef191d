"""Japanese: the report's words. Every language module has the same names and keys (see en.py)."""

from __future__ import annotations

from typing import Any

LABELS = {True: "実測", False: "未実測", None: "未確認"}
PARTLY = "一部実測"
UNIT_GAP = ""  # 384次元: no space between a number and its unit
VERSION = "バージョン"

TERMS: dict[str, Any] = {
    "item": "項目", "target": "サーバー", "lang": "言語", "probe": "リクエスト", "verdict": "判定",
    "status": "ステータス", "legacy_role": "既存サーバー", "candidate_role": "候補",
    "dimension": "次元", "first_l2": "最初のベクトルの長さ(L2)",
    "token_total": "文書{n}件のトークン数合計",
    "cosine_mmm": "文書ごとのコサイン類似度(既存サーバー比) 最小 · 中央 · 最大",
    "repeat_min": "繰り返し間の最小コサイン類似度",
    "index_order": "応答のindex順序", "reference": "基準", "yes": "正しい", "no": "誤り",
    "dims_unit": "次元", "tokens_unit": "トークン", "no_answer": "応答なし",
    "compared_with": "比較基準: 既存サーバーの {probe}",
    "tokenizer_match": "モデルのトークナイザーによるトークン数({n}、オフライン)と一致",
    "instruction": {
        "server": "サーバー", "request": "リクエスト", "tokens": "入力トークン数(クエリ{n}件の合計)",
        "tokenizer": "トークナイザーによるトークン数", "cosine": "基準とのコサイン類似度 最小 · 中央",
        "reading": "解釈", "status": "ステータス", "cosine_one": "基準(最初のクエリ)とのコサイン類似度",
        "tokens_one": "入力トークン数",
        "variants": {"server_instruction": "`input_type: \"query\"`(サーバーがインストラクションを付与)",
                     "client_prefixed": "クライアントがインストラクションを文字列として付与",
                     "plain": "インストラクションなし"},
        "readings": {"applied": "インストラクション適用(モデルカードの形式と一致)",
                     "ignored": "フィールドを無視(インストラクションなしと同じ)",
                     "differs": "別のベクトル(モデルカードの形式とも、インストラクションなしとも異なる)",
                     "no-instruction": "インストラクションなし(モデルカードの形式と異なる)",
                     "no-instruction-equals-reference": "インストラクションなしでも基準と一致"},
    },
    "seq_p50": "シーケンシャル p50 (ms)", "seq_p99": "シーケンシャル p99 (ms)", "conc_p50": "並行度{c} p50 (ms)",
    "conc_p99": "並行度{c} p99 (ms)", "conc_rate": "並行度{c} スループット (文書/s)",
    "per_repeat": "繰り返しごとのスループット (文書/s)",
    "errors": "エラー (失敗/リクエスト)", "point": "測定点", "p50": "p50 (ms)", "p99": "p99 (ms)",
    "rate": "スループット (文書/s)", "backend": "バックエンド", "dtype": "dtype", "device": "デバイス",
    "modality": "入力", "n": "n", "cos_min": "コサイン最小", "cos_median": "コサイン中央", "cos_max": "コサイン最大",
    "threshold": "しきい値", "pass": "合格", "fail": "不合格", "step": "ステップ", "updated": "更新",
    "problems": "問題", "start_s": "起動 (s)", "rss_start": "起動直後のRSS (MiB)",
    "rss_end": "終了時のRSS (MiB)", "measured_s": "測定時間 (s)", "version": "バージョン", "kind": "種類",
    "label": "表示", "article_legacy": "記事: 既存サーバー",
    "article_candidate": "記事: Dynamo埋め込みワーカー",
    "run_side": "今回の実行: {name}", "article_row": "記事: {name}",
    "docs": "文書", "queries": "クエリ", "batch": "バッチサイズ", "repeats": "繰り返し",
    "mean_tokens": "1文書あたりの平均トークン数", "languages": "言語別の文書数", "request": "リクエスト",
    "all_failed": "リクエスト{n}件がすべて失敗", "failed_some": "失敗 {f}/{n}",
    "not_meaningful": "意味なし(ランダム重み)",
    "no_section": "summary.json にこの節がありません。この節が導入される前のキットで作成されたものです",
    "failed_short": "失敗",
    "on": "オン", "off": "オフ", "lock": "グローバルロック", "rss_peak": "RSSピーク (MiB)",
    "ablation_mark": "アブレーション",
    "concurrency": "並行度", "sweep_skipped": "スイープを省略: {why}",
    "rss_unreadable_external": "外部サーバーのため、メモリを読み取れません",
    "rss_unreadable": "メモリのサンプルがありません",
    "source_kind": "取得元", "kind_server": "サーバー", "kind_offline": "オフラインバックエンド",
    "non_finite": "— (非有限のベクトル{n}件)", "text_image": "(text+image)",
    "variant": "ケース", "documents_of": "文書ベクトル", "queries_as": "クエリ", "ndcg": "nDCG@10",
    "d_ndcg": "Δ nDCG@10", "recall": "recall@5", "d_recall": "Δ recall@5", "overlap": "top-5重なり",
    "judged": "判定付きクエリ",
    "variants": {"legacy": "既存サーバーのまま", "naive": "アドレス変更のみ", "shim": "shim経由"},
    "queries_how": {"legacy": "`input_type: query`(サーバーがインストラクションを付与)",
                    "naive": "`input_type: query`(同じリクエスト)",
                    "shim": "クライアントがインストラクションを文字列として付与"},
    "ranking_defs": [
        "nDCG@10: 段階的な関連度(2 = 回答している、1 = 一部、0 = 判定なし)で測る上位10件の順位品質です。"
        "ゲイン 2^rel−1、割引 log2(順位+1)で計算し、同じ判定を理想的な順序に並べた値で正規化します。",
        "recall@5: クエリの関連文書(等級1以上)のうち、上位5件に入った割合です。",
        "top-5重なり: 既存サーバーの上位5件の集合とのJaccard係数をクエリごとに求め、平均した値です。"
        "1.000 はすべてのクエリで同じ5文書が返ることを意味します。",
    ],
    "rank_same": "既存サーバーと同じ順位",
    "rank_differs": "既存サーバーと異なる順位",
    "rank_short": "{state}(Δ nDCG@10 {d_ndcg}、top-5重なり {overlap})",
    "rank_line": "{state}(Δ nDCG@10 {d_ndcg}、Δ recall@5 {d_recall}、top-5重なり {overlap}、上位5件が変わったクエリ "
                 "{changed}/{queries}件)",
    "rank_decision": {
        "client": "アドレスを変更するだけでは、エラーなしで検索順位が変わります。クライアントを修正すると(`embedswap.shim` が"
                  "行うように、インストラクションを文字列として付与する)、既存の順位に戻ります。クライアントの修正は必要ですが、"
                  "このワークロードでは順位のためにインデックスを作り直す必要はありません。",
        "none": "どちらの場合も既存サーバーの順位が維持されます。このワークロードでは、順位のためにクライアントを修正する必要も、"
                "インデックスを作り直す必要もありません。",
        "reindex": "クライアントを修正しても、順位が既存サーバーと異なります。候補のベクトルは既存のベクトルと同じ順位を"
                   "付けません。新旧のベクトルを混用せず、候補でインデックスを作り直し、切り替える前に検索品質を改めて確認して"
                   "ください。",
        "shim_only": "shim経由では既存サーバーの順位が維持されるため、このワークロードでは順位のためにインデックスを作り直す"
                     "必要はありません。アドレス変更のみの場合の順位は測定していないため、クライアントをそのままにしてよいかは"
                     "ここでは判断しません。",
        "shim_missing": "shim経由の順位は{label}({why})のため、インデックスを作り直すべきかはここでは判断しません。",
    },
    "before_after": "判定(前 → 後)", "through_shim": "shim経由の応答",
    "settings": {"true": "オン", "false": "オフ"},
    "legacy_side": "既存サーバー側の失敗(ステータス{status})で、置き換えれば解消します",
    "shim_done": "`embedswap.shim` が代行します(shim経由の判定: same)。",
    "shim_left": "`embedswap.shim` を経由しても残ります: {items}。",
    "not_probed": "shim経由では測定していません(captures/{name}/shim_probes.jsonl なし)",
    "sections": {"vectors": "ベクトル", "contract": "APIコントラクト", "latency": "レイテンシとスループット",
                 "parity": "数値パリティ", "targets": "サーバー", "environment": "環境", "ranking": "検索順位",
                 "shim": "移行用shim", "ablation": "ロックのアブレーション"},
    "verdicts": {
        "same": "同等の応答です(ステータスの区分が同じで、ベクトルはしきい値内)。",
        "silent-divergence": "両方とも200を返しますが、ベクトルやフィールドが異なります。エラーは出ず検索品質だけが静かに"
                             "低下する、最も危険な区分です。",
        "loud-failure": "一方がリクエストを拒否(4xx)し、もう一方は応答しました。すぐに表面化するため、修正は容易です。",
        "retry-hazard": "クライアント側の誤りに5xx(または無応答)が返ります。リトライするクライアントは、決して成功しない"
                        "リクエストを再送し続けます。",
        "format-difference": "数値は同じで、形式だけが異なります(例: float配列ではなくbase64文字列)。",
    },
    "changes": {
        "drop_dimensions": "リクエストから `dimensions` を除外します。次元を減らす必要がある場合は、クライアント側で先頭N個を"
                           "切り出して再正規化します。",
        "prepend_instruction": "クエリ用インストラクションをフィールド(`input_type`、`instruction`)で送るのではなく、"
                               "文字列としてクエリの前に付与します。",
        "truncate": "長い入力はクライアント側で事前に切り詰めます{limit}。",
        "truncate_limit": "(既存サーバーは{n}トークンで切り詰めていました)",
        "decode_encoding": "`encoding_format` を明示し、応答の形式を確認します。base64ならデコードし、そうでなければ "
                           "`float` を指定します。",
        "cap_batch": "大きなリクエストは小さなバッチに分割して送信します(この実験のバッチサイズは{batch})。",
        "validate_input": "空の入力や型の誤った入力は、送信前にクライアントで弾きます。",
        "send_text": "トークンIDではなく文字列で送信します。",
        "model_name": "`model` にはサーバーが提供しているモデル名を正確に指定します。",
        "strip_whitespace": "前後の空白はクライアント側で除去してから送信します。",
        "normalise_unicode": "テキストはクライアント側で正規化(NFC、ゼロ幅文字の除去)してから送信します。",
        "batch_invariance": "ベクトルが計算時のバッチ(バッチ内の位置やサイズ)に依存します。インデックスとクエリのバッチ方式を"
                            "揃えるか、インデックスを作り直します。",
        "plain_differs": "オプションなしの基本リクエストの時点で応答が異なります。何よりも先にこれを解消してください。",
        "review": "`{probe}` の差異({verdict})を確認します。",
        "no_retry_5xx": "これらのリクエストに返る5xx(または無応答)はリトライしません。クライアント側の誤りなので、再送しても"
                        "再び失敗します。",
    },
}
