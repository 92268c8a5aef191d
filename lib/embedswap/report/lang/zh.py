"""Simplified Chinese: the report's words. Every language module has the same names and keys (see ko.py)."""

from __future__ import annotations

from typing import Any

LABELS = {True: "实测", False: "未实测", None: "未确认"}
PARTLY = "部分实测"
UNIT_GAP = ""  # 384维: no space between a number and its unit, as the article writes 256维 / 54.3ms
VERSION = "版本"

TERMS: dict[str, Any] = {
    "item": "项目", "target": "服务器", "lang": "语言", "probe": "请求", "verdict": "判定", "status": "状态",
    "legacy_role": "现有服务器", "candidate_role": "候选",
    "dimension": "维度", "first_l2": "第一个向量的长度 (L2)",
    "token_total": "{n}个文档的 Token 总数",
    "cosine_mmm": "各文档与现有服务器的余弦相似度，最小 · 中位数 · 最大", "repeat_min": "各次重复间的最低余弦相似度",
    "index_order": "响应的 index 顺序", "reference": "基准", "yes": "正确", "no": "错误",
    "dims_unit": "维", "tokens_unit": " 个 Token",  # 384维, 28 个 Token (the article spaces a counter word)
    "no_answer": "无响应",
    "compared_with": "比较基准：现有服务器对 {probe} 的响应",
    "tokenizer_match": "与模型分词器的计数一致（{n}，离线）",
    "instruction": {
        "server": "服务器", "request": "请求", "tokens": "输入 Token 数（{n} 条查询合计）",
        "tokenizer": "分词器计数", "cosine": "与基准的余弦相似度，最小 · 中位数",
        "reading": "解读", "status": "状态", "cosine_one": "与基准的余弦相似度（第一条查询）",
        "tokens_one": "输入 Token 数",
        "variants": {"server_instruction": "`input_type: \"query\"`（由服务器添加指令）",
                     "client_prefixed": "由客户端将指令写入文本",
                     "plain": "无指令"},
        "readings": {"applied": "已应用指令（与模型卡片的格式一致）",
                     "ignored": "字段被忽略（与无指令时相同）",
                     "differs": "另一个向量（既不同于模型卡片的格式，也不同于无指令时）",
                     "no-instruction": "无指令（与模型卡片的格式不同）",
                     "no-instruction-equals-reference": "无指令，却与基准相同"},
    },
    "seq_p50": "顺序 p50 (ms)", "seq_p99": "顺序 p99 (ms)", "conc_p50": "并发 {c} p50 (ms)",
    "conc_p99": "并发 {c} p99 (ms)", "conc_rate": "并发 {c} 吞吐量 (文档/s)", "per_repeat": "每次重复的吞吐量 (文档/s)",
    "errors": "错误（失败/请求）", "point": "测量点", "p50": "p50 (ms)", "p99": "p99 (ms)",
    "rate": "吞吐量 (文档/s)", "backend": "后端", "dtype": "dtype", "device": "设备",
    "modality": "输入", "n": "n", "cos_min": "余弦最小值", "cos_median": "余弦中位数", "cos_max": "余弦最大值",
    "threshold": "阈值", "pass": "通过", "fail": "未通过", "step": "步骤", "updated": "更新时间",
    "problems": "问题", "start_s": "启动耗时 (s)", "rss_start": "启动后 RSS (MiB)",
    "rss_end": "结束时 RSS (MiB)", "measured_s": "测量时长 (s)", "version": "版本", "kind": "类型",
    "label": "标记", "article_legacy": "原文：现有服务器",
    "article_candidate": "原文：Dynamo 嵌入工作进程",
    "run_side": "本次运行：{name}", "article_row": "原文：{name}",
    "docs": "文档", "queries": "查询", "batch": "批大小", "repeats": "重复次数",
    "mean_tokens": "每个文档的平均 Token 数", "languages": "各语言的文档数", "request": "请求",
    "all_failed": "全部 {n} 个请求均失败", "failed_some": "失败 {f}/{n}",
    "not_meaningful": "无意义（随机权重）",
    "no_section": "summary.json 中没有这一节，它是由引入该节之前的工具包生成的",
    "failed_short": "失败",
    "on": "开", "off": "关", "lock": "全局锁", "rss_peak": "RSS 峰值 (MiB)", "ablation_mark": "消融",
    "concurrency": "并发", "sweep_skipped": "已跳过扫描：{why}",
    "rss_unreadable_external": "外部服务器，无法读取其内存",
    "rss_unreadable": "没有内存采样",
    "source_kind": "来源", "kind_server": "服务器", "kind_offline": "离线后端",
    "non_finite": "—（{n} 个含非有限值的向量）", "text_image": "（文本+图像）",
    "variant": "情形", "documents_of": "文档向量", "queries_as": "查询", "ndcg": "nDCG@10",
    "d_ndcg": "Δ nDCG@10", "recall": "recall@5", "d_recall": "Δ recall@5", "overlap": "top-5 重合度",
    "judged": "有判定的查询",
    "variants": {"legacy": "维持现有服务器", "naive": "仅更换地址", "shim": "经由 shim"},
    "queries_how": {"legacy": "`input_type: query`（由服务器添加指令）",
                    "naive": "`input_type: query`（相同的请求）",
                    "shim": "由客户端以文本形式在前面添加指令"},
    "ranking_defs": [
        "nDCG@10：按分级相关度（2 = 能回答，1 = 部分相关，0 = 未判定）衡量的前 10 名排序质量："
        "增益为 2^rel−1，折扣为 log2(排名+1)，并以同一组判定的理想排序进行归一化。",
        "recall@5：某条查询的相关文档（等级 ≥ 1）中出现在其前 5 名里的比例。",
        "top-5 重合度：与现有服务器前 5 名集合的 Jaccard 指数，对所有查询取平均；"
        "1.000 表示每条查询返回的都是相同的 5 个文档。",
    ],
    "rank_same": "与现有服务器排名相同",
    "rank_differs": "与现有服务器不同",
    "rank_short": "{state}（Δ nDCG@10 {d_ndcg}，top-5 重合度 {overlap}）",
    "rank_line": "{state}（Δ nDCG@10 {d_ndcg}，Δ recall@5 {d_recall}，top-5 重合度 {overlap}；"
                 "前 5 名发生变化的查询：{changed}/{queries} 条）",
    "rank_decision": {
        "client": "仅更换地址会在不报任何错误的情况下改变排名；修改客户端后（以文本形式添加指令，即 "
                  "`embedswap.shim` 所做的事）则恢复为现有服务器的排名。需要修改客户端；在此工作负载下，"
                  "排名方面无需重新构建索引。",
        "none": "无论哪种方式，排名都与现有服务器保持一致：在此工作负载下，从排名来看既无需修改客户端，"
                "也无需重新构建索引。",
        "reindex": "即使修改了客户端，排名仍与现有服务器不同：候选服务器的向量排序方式与现有向量不同。"
                   "不要混用新旧向量；应使用候选服务器重新构建索引，并在切换之前重新检查搜索质量。",
        "shim_only": "经由 shim 时排名与现有服务器保持一致，因此在此工作负载下，排名方面无需重新构建索引；"
                     "仅更换地址时的排名未测量，因此客户端能否保持不变，在此不作判断。",
        "shim_missing": "经由 shim 的排名：{label}（{why}），因此是否需要重新构建索引，在此不作判断。",
    },
    "before_after": "判定（前 → 后）", "through_shim": "经由 shim 的响应",
    "settings": {"true": "开", "false": "关"},
    "legacy_side": "状态 {status} 是现有服务器一侧的失败，换成候选服务器后即消失",
    "shim_done": "`embedswap.shim` 会处理这一项（经由 shim 的判定：same）。",
    "shim_left": "经由 `embedswap.shim` 后仍然存在：{items}。",
    "not_probed": "未经由 shim 进行探测（没有 captures/{name}/shim_probes.jsonl）",
    "sections": {"vectors": "向量", "contract": "API 契约", "latency": "延迟与吞吐量",
                 "parity": "数值一致性", "targets": "服务器", "environment": "环境",
                 "ranking": "搜索排名", "shim": "迁移 shim", "ablation": "锁的消融实验"},
    "verdicts": {
        "same": "响应等价（状态类别相同，向量差异在阈值之内）。",
        "silent-divergence": "双方都返回 200，但向量或字段不同：不报错，只是搜索质量悄然下降，是最危险的一类。",
        "loud-failure": "一方拒绝了请求（4xx），而另一方正常响应：问题立即可见，容易修复。",
        "retry-hazard": "客户端错误却返回 5xx（或无响应）：会重试的客户端会反复重发一个永远不可能成功的请求。",
        "format-difference": "数值相同，只是形式不同（例如以 base64 字符串代替浮点数组）。",
    },
    "changes": {
        "drop_dimensions": "从请求中移除 `dimensions`；如果需要更少的维度，在客户端截取（前 N 维）后重新归一化。",
        "prepend_instruction": "将查询指令以文本形式拼接在查询前面，而不是通过字段（`input_type`、`instruction`）发送。",
        "truncate": "由客户端预先截断长输入{limit}。",
        "truncate_limit": "（现有服务器会在 {n} 个 Token 处截断）",
        "decode_encoding": "明确指定 `encoding_format` 并检查响应的形式：解码 base64，或者请求 `float`。",
        "cap_batch": "将大请求拆分成较小的批次发送（本实验每批 {batch} 个）。",
        "validate_input": "在发送之前，由客户端拦截空输入或类型错误的输入。",
        "send_text": "发送文本，而不是 Token ID。",
        "model_name": "在 `model` 中准确填写服务器所提供的模型名称。",
        "strip_whitespace": "由客户端去除首尾的空白字符。",
        "normalise_unicode": "在客户端对文本进行规范化（NFC，去除零宽字符）。",
        "batch_invariance": "向量取决于计算时所在的批次：让索引和查询采用相同的批处理方式，或者重新构建索引。",
        "plain_differs": "不带任何选项的普通请求就已返回不同的响应：请先解决这一点。",
        "review": "检查 `{probe}` 上的差异（{verdict}）。",
        "no_retry_5xx": "对这些请求返回的 5xx（或无响应）不要重试：它们属于客户端错误，重发也会再次失败。",
    },
}
