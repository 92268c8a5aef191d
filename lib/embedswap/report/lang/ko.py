"""Korean (the article's language): the report's words. Every language module has the same names and keys.

The labels follow the article: 실측 (measured), 미실측 (not measured), 미확인 (unconfirmed).
"""

from __future__ import annotations

from typing import Any

LABELS = {True: "실측", False: "미실측", None: "미확인"}
PARTLY = "일부 실측"
UNIT_GAP = ""  # 384차원: no space between a number and its unit
VERSION = "버전"

TERMS: dict[str, Any] = {
    "item": "항목", "target": "서버", "lang": "언어", "probe": "요청", "verdict": "판정", "status": "상태",
    "legacy_role": "기존 서버", "candidate_role": "후보",
    "dimension": "차원", "first_l2": "첫 벡터의 길이(L2)", "token_total": "문서 {n}개의 토큰 수 합",
    "cosine_mmm": "문서별 코사인 (기존 서버 대비) 최소 · 중앙 · 최대", "repeat_min": "반복 간 최소 코사인",
    "index_order": "응답 index 순서", "reference": "기준", "yes": "맞음", "no": "틀림",
    "dims_unit": "차원", "tokens_unit": "토큰", "no_answer": "응답 없음",
    "compared_with": "비교 기준: 레거시의 {probe}",
    "tokenizer_match": "모델 토크나이저의 셈({n}, 오프라인)과 같음",
    "instruction": {
        "server": "서버", "request": "요청", "tokens": "입력 토큰 (질의 {n}개 합)", "tokenizer": "토크나이저 셈",
        "cosine": "기준과의 코사인, 최소 · 중앙", "reading": "해석", "status": "상태",
        "cosine_one": "기준(첫 질의)과의 코사인", "tokens_one": "입력 토큰",
        "variants": {"server_instruction": "`input_type: \"query\"` (서버가 지시문을 붙임)",
                     "client_prefixed": "클라이언트가 지시문을 글자로 붙임",
                     "plain": "지시문 없음"},
        "readings": {"applied": "지시문 적용됨 (모델 카드 형식과 같음)",
                     "ignored": "필드 무시됨 (지시문 없는 답과 같음)",
                     "differs": "다른 벡터 (모델 카드 형식도, 지시문 없는 답도 아님)",
                     "no-instruction": "지시문 없음 (모델 카드 형식과 다름)",
                     "no-instruction-equals-reference": "지시문 없이도 기준과 같음"},
    },
    "seq_p50": "순차 p50 (ms)", "seq_p99": "순차 p99 (ms)", "conc_p50": "동시 {c} p50 (ms)",
    "conc_p99": "동시 {c} p99 (ms)", "conc_rate": "동시 {c} 처리량 (문서/s)", "per_repeat": "반복별 처리량 (문서/s)",
    "errors": "오류 (실패/요청)", "point": "지점", "p50": "p50 (ms)", "p99": "p99 (ms)", "rate": "처리량 (문서/s)",
    "backend": "백엔드", "dtype": "dtype", "device": "장치", "modality": "입력", "n": "n",
    "cos_min": "코사인 최소", "cos_median": "코사인 중앙", "cos_max": "코사인 최대", "threshold": "기준",
    "pass": "통과", "fail": "실패", "step": "단계", "updated": "갱신", "problems": "문제",
    "start_s": "기동 (s)", "rss_start": "RSS 기동 직후 (MiB)", "rss_end": "RSS 끝 (MiB)",
    "measured_s": "측정 시간 (s)", "version": "버전", "kind": "종류", "label": "표시",
    "article_legacy": "글: 기존 서버", "article_candidate": "글: Dynamo 임베딩 워커",
    "run_side": "이 실행: {name}", "article_row": "글: {name}",
    "docs": "문서", "queries": "질의", "batch": "묶음 크기", "repeats": "반복",
    "mean_tokens": "문서당 평균 토큰", "languages": "언어별 문서 수", "request": "요청",
    "all_failed": "요청 {n}건이 모두 실패", "failed_some": "실패 {f}/{n}",
    "not_meaningful": "의미 없음(무작위 가중치)",
    "no_section": "summary.json 에 이 절이 없습니다(이 절이 생기기 전의 키트가 만든 요약)",
    "failed_short": "실패",
    "on": "켬", "off": "끔", "lock": "전역 잠금", "rss_peak": "RSS 최고 (MiB)", "ablation_mark": "대조 실험",
    "concurrency": "동시성", "sweep_skipped": "훑기 건너뜀: {why}",
    "rss_unreadable_external": "외부 서버라 메모리를 읽을 수 없습니다",
    "rss_unreadable": "메모리 표본이 없습니다",
    "source_kind": "출처", "kind_server": "서버", "kind_offline": "오프라인 백엔드",
    "non_finite": "— (비정상 벡터 {n}개)", "text_image": "(text+image)",
    "variant": "경우", "documents_of": "문서 벡터", "queries_as": "질의", "ndcg": "nDCG@10",
    "d_ndcg": "Δ nDCG@10", "recall": "recall@5", "d_recall": "Δ recall@5", "overlap": "top-5 겹침",
    "judged": "판정 있는 질의",
    "variants": {"legacy": "기존 서버 그대로", "naive": "주소만 바꿈", "shim": "shim 경유"},
    "queries_how": {"legacy": "`input_type: query` (서버가 지시문을 붙임)",
                    "naive": "`input_type: query` (같은 요청)",
                    "shim": "클라이언트가 지시문을 글자로 붙임"},
    "ranking_defs": [
        "nDCG@10: 관련도 등급(2 = 답함, 1 = 일부, 0 = 판정 없음)으로 잰 상위 10개의 순위 품질입니다. 이득 2^rel−1, "
        "할인 log2(순위+1), 같은 판정의 이상적 순서로 정규화합니다.",
        "recall@5: 관련 문서(등급 1 이상) 가운데 상위 5개에 든 비율입니다.",
        "top-5 겹침: 기존 서버의 상위 5개 집합과의 자카드 지수를 질의마다 내어 평균한 값입니다. 1.000 이면 모든 "
        "질의에서 같은 5개를 돌려줍니다.",
    ],
    "rank_same": "기존 서버와 같은 순위",
    "rank_differs": "기존 서버와 다름",
    "rank_short": "{state}(Δ nDCG@10 {d_ndcg}, top-5 겹침 {overlap})",
    "rank_line": "{state}(Δ nDCG@10 {d_ndcg}, Δ recall@5 {d_recall}, top-5 겹침 {overlap}; 상위 5개가 바뀐 질의 "
                 "{changed}/{queries}개)",
    "rank_decision": {
        "client": "주소만 바꾸면 오류 없이 검색 순위가 바뀌고, 클라이언트를 고치면(지시문을 글자로, "
                  "`embedswap.shim` 이 하는 일) 기존 순위로 돌아옵니다. 클라이언트를 고쳐야 하고, 이 작업 부하에서는 "
                  "순위 때문에 색인을 다시 만들 필요는 없습니다.",
        "none": "어느 쪽이든 기존 서버의 순위가 유지됩니다. 이 작업 부하에서는 순위 때문에 클라이언트를 고치거나 "
                "색인을 다시 만들 필요가 없습니다.",
        "reindex": "클라이언트를 고쳐도 순위가 기존 서버와 다릅니다. 후보의 벡터가 기존 벡터처럼 순위를 매기지 "
                   "않으므로, 옛 벡터와 새 벡터를 섞지 말고 후보로 색인을 다시 만든 뒤 검색 품질을 다시 확인해야 합니다.",
        "shim_only": "shim 을 거치면 기존 서버의 순위가 유지되고, 이 작업 부하에서는 순위 때문에 색인을 다시 만들 필요가 "
                     "없습니다. 주소만 바꾼 경우의 순위는 재지 못했으므로, 클라이언트를 그대로 둬도 되는지는 정하지 "
                     "않습니다.",
        "shim_missing": "shim 경유 순위는 {label}({why})이므로, 색인을 다시 만들어야 하는지는 여기서 정하지 않습니다.",
    },
    "before_after": "판정 전 → 후", "through_shim": "shim 경유 응답",
    "settings": {"true": "켬", "false": "끔"},
    "legacy_side": "기존 서버 쪽 실패(상태 {status})로, 바꾸면 사라집니다",
    "shim_done": "`embedswap.shim` 이 대신합니다(shim 경유 판정: same).",
    "shim_left": "`embedswap.shim` 을 거쳐도 남습니다: {items}.",
    "not_probed": "shim 을 거쳐 재지 않았습니다(captures/{name}/shim_probes.jsonl 없음)",
    "sections": {"vectors": "벡터", "contract": "API 계약", "latency": "지연 시간과 처리량", "parity": "수치 패리티",
                 "targets": "서버", "environment": "환경", "ranking": "검색 순위", "shim": "마이그레이션 shim",
                 "ablation": "잠금 대조 실험"},
    "verdicts": {
        "same": "같은 답입니다(같은 상태 부류, 벡터는 기준 안).",
        "silent-divergence": "양쪽 다 200 인데 벡터나 필드가 다릅니다. 오류 없이 검색 품질만 떨어지는, 가장 위험한 부류입니다.",
        "loud-failure": "한쪽이 요청을 거절(4xx)하고 다른 쪽은 답했습니다. 바로 드러나므로 고치기 쉽습니다.",
        "retry-hazard": "클라이언트 쪽 잘못인데 5xx(또는 무응답)로 돌아옵니다. 재시도하는 클라이언트는 고칠 수 없는 요청을 계속 다시 보냅니다.",
        "format-difference": "숫자는 같고 모양만 다릅니다(예: base64 문자열과 실수 배열).",
    },
    "changes": {
        "drop_dimensions": "`dimensions` 를 요청에서 빼고, 차원을 줄여야 하면 클라이언트에서 잘라(앞 N개) 다시 정규화합니다.",
        "prepend_instruction": "질의용 지시문을 필드(`input_type`, `instruction`)가 아니라 글자로 질의 앞에 붙여 보냅니다.",
        "truncate": "긴 입력은 클라이언트가 미리 자릅니다{limit}.",
        "truncate_limit": "(기존 서버는 {n}토큰에서 잘랐습니다)",
        "decode_encoding": "`encoding_format` 을 명시하고 답의 모양을 확인합니다: base64 면 디코딩하고, 아니면 `float` 를 요청합니다.",
        "cap_batch": "큰 요청은 작은 묶음으로 나눠 보냅니다(이 실험의 묶음 크기는 {batch}).",
        "validate_input": "빈 입력이나 잘못된 타입은 보내기 전에 클라이언트가 걸러냅니다.",
        "send_text": "토큰 ID 가 아니라 글자로 보냅니다.",
        "model_name": "`model` 에 서버가 띄운 이름을 정확히 넣습니다.",
        "strip_whitespace": "앞뒤 공백은 클라이언트가 지우고 보냅니다.",
        "normalise_unicode": "유니코드를 클라이언트에서 정규화(NFC, 폭 없는 공백 제거)하고 보냅니다.",
        "batch_invariance": "묶음 안의 위치·크기에 따라 벡터가 달라집니다. 색인과 질의의 묶음 방식을 맞추거나 색인을 다시 만듭니다.",
        "plain_differs": "옵션 없는 기본 요청부터 답이 다릅니다. 옮기기 전에 이것부터 확인합니다.",
        "review": "`{probe}` 의 차이({verdict})를 확인합니다.",
        "no_retry_5xx": "이 요청들에 돌아오는 5xx(또는 무응답)는 재시도하지 않습니다. 클라이언트 쪽 잘못이므로 다시 보내도 실패합니다.",
    },
}
